/** The small HTML pages the edge answers with itself (404, 503, rule refusals, ...). */

export const BAD_PATH = 'The request path is not valid here: an encoded "/" or "\\", a NUL, an invalid percent-escape or a path that does not normalise.';

export const OVER_CAP = 'Too many open connections from your address; try again shortly.';

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function page(title: string, text: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}p{color:#555}</style></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p><p><small>Berth edge</small></p></body></html>\n`;
}
