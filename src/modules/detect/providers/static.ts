/**
 * The static provider: a folder of files served by the edge, as Railpack's staticfile provider finds
 * them: the `root:` a `Staticfile` names, else a `public` folder, else the folder itself when it holds
 * an `index.html`. A Staticfile's `index_fallback: true` makes it a single-page app (index.html for
 * paths with no file); without it, paths with no file are 404s.
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';

export interface Staticfile {
  /** The `root:` folder, relative to the app folder (null when the Staticfile names none). */
  root: string | null;
  /** `index_fallback:` (null when not set). */
  indexFallback: boolean | null;
}

/** The folder's `Staticfile` (a small YAML file: `root: public`, `index_fallback: true`), or null when it has none. */
export function staticfileOf(f: Facts): Staticfile | null {
  if (!f.hasFile('Staticfile')) return null;
  const text = f.read('Staticfile') ?? '';
  const value = (key: string): string | null => {
    const m = new RegExp(`^${key}\\s*:\\s*(.*?)\\s*(?:#.*)?$`, 'm').exec(text);
    const v = m?.[1]?.replace(/^(['"])(.*)\1$/, '$2').trim();
    return v ? v : null;
  };
  const root = value('root');
  const fallback = value('index_fallback');
  return {
    root: root && !root.split('/').includes('..') && !root.startsWith('/') ? root.replace(/^\.\//, '').replace(/\/+$/, '') || '.' : null,
    indexFallback: fallback === null ? null : /^(true|yes|on)$/i.test(fallback),
  };
}

/** The folder a static site is served from (Staticfile root, `public`, `.` with an index.html), or null. */
export function staticRoot(f: Facts): string | null {
  const root = staticfileOf(f)?.root;
  if (root) return root;
  if (f.hasDir('public') || f.hasFile('public')) return 'public';
  if (f.hasFile('index.html')) return '.';
  return null;
}

export const staticProvider: Provider = {
  name: 'static',
  detect: (f) => staticRoot(f) !== null,
  plan(f): Detection {
    const root = staticRoot(f) ?? '.';
    const spa = staticfileOf(f)?.indexFallback ?? false;
    return detection('static', { outputDirectory: root, static: { outputDirectory: root, spa } });
  },
};
