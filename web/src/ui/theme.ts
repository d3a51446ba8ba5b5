export type Theme = 'light' | 'dark' | 'system';

const KEY = 'berth.theme';

export function storedTheme(): Theme {
  const t = localStorage.getItem(KEY);
  return t === 'light' || t === 'dark' ? t : 'system';
}

/** Applies a theme: `system` follows prefers-color-scheme (the CSS does), the others pin it. */
export function applyTheme(t: Theme): void {
  if (t === 'system') {
    localStorage.removeItem(KEY);
    delete document.documentElement.dataset.theme;
  } else {
    localStorage.setItem(KEY, t);
    document.documentElement.dataset.theme = t;
  }
}
