import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The web dashboard (`web/`, built into `dist/web` by `npm install`): `berth serve` answers every
 * GET or HEAD outside `/api` with it. `/assets/*` are Vite's content-hashed files (cached for a
 * year, with the `.br`/`.gz` variants the build wrote when the client accepts them); every other
 * path is the single page's `index.html` (never cached), whose router shows the page.
 *
 * `/api/docs` is the API reference, a second page of the same build (`api-docs.html`: Redoc's bundle
 * renders `/api/openapi.json`), with its own policy: Redoc injects its styles and runs its search in a
 * worker made from a blob.
 *
 * Nothing is read or imported until the first request, so a server nobody browses holds none of it.
 */

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE_HEADERS = {
  'content-security-policy': CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
};

/** The API reference's policy: scripts still only from this origin; Redoc's styles inline, its search in a blob worker. */
const DOCS_CSP = CSP.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'") + "; worker-src blob:";

const DOCS_HEADERS = { ...PAGE_HEADERS, 'content-security-policy': DOCS_CSP };

/** The API reference page's paths (the only page under /api). */
const API_DOCS = new Set(['/api/docs', '/api/docs/']);

/** Is this request the dashboard's (a page or one of its files) rather than the API's? */
export function isDashboardRequest(req: FastifyRequest): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const p = req.url.split('?')[0]!;
  return API_DOCS.has(p) || (p !== '/api' && !p.startsWith('/api/'));
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/** The encoding to send `rel` in: a prebuilt `.br` (else `.gz`) the client accepts and the build wrote, else none. */
async function encodingFor(root: string, rel: string, accept: string | undefined): Promise<'br' | 'gzip' | null> {
  if (!accept) return null;
  const { default: negotiate } = await import('@fastify/accept-negotiator');
  const header = accept.toLowerCase();
  let enc = negotiate(header, ['br', 'gzip'] as const);
  if (enc === 'br' && !(await isFile(path.join(root, `${rel}.br`)))) enc = negotiate(header, ['gzip'] as const);
  if (enc === 'gzip' && !(await isFile(path.join(root, `${rel}.gz`)))) enc = null;
  return enc;
}

function notBuilt(reply: FastifyReply): void {
  reply
    .code(503)
    .type('text/plain; charset=utf-8')
    .header('cache-control', 'no-store')
    .send(`The dashboard is not built. Run \`npm install\` (or \`npm run build:web\`) in Berth's folder, or set BERTH_DASHBOARD_DIR.\nThe API answers under /api.\n`);
}

/** Answers a dashboard request from `root` (the built dashboard). */
export async function serveDashboard(root: string, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const { default: send } = await import('@fastify/send');
  const pathname = req.url.split('?')[0]!;
  const asset = pathname.startsWith('/assets/');
  // An asset is the file itself (404 when absent: a stale page asks for an old hash); anything else
  // is the page, whose router decides (and shows its own "not found").
  const docs = API_DOCS.has(pathname);
  let rel = docs ? 'api-docs.html' : 'index.html';
  if (asset) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      decoded = '';
    }
    const normal = path.posix.normalize(decoded);
    if (!decoded || normal !== decoded || normal.includes('\0')) {
      reply.code(404).type('text/plain; charset=utf-8').send('not found\n');
      return;
    }
    rel = normal.slice(1);
  }
  const encoding = await encodingFor(root, rel, req.headers['accept-encoding']);
  const served = encoding === 'br' ? `${rel}.br` : encoding === 'gzip' ? `${rel}.gz` : rel;
  const r = await send(req.raw, `/${served}`, { root, index: false, dotfiles: 'deny', cacheControl: false, contentType: false, acceptRanges: false });
  if (r.type !== 'file') {
    r.stream.destroy();
    // No page: the dashboard was never built (or its folder is wrong); a missing asset is a 404.
    if (!asset) return notBuilt(reply);
    reply.code(404).type('text/plain; charset=utf-8').send('not found\n');
    return;
  }
  reply.code(r.statusCode);
  for (const [k, v] of Object.entries(r.headers)) if (v !== undefined) reply.header(k, v);
  const type = send.mime.getType(rel) ?? 'application/octet-stream';
  reply.header('content-type', send.isUtf8MimeType(type) ? `${type}; charset=utf-8` : type);
  reply.header('vary', 'accept-encoding');
  if (encoding) reply.header('content-encoding', encoding === 'br' ? 'br' : 'gzip');
  if (asset) reply.header('cache-control', 'public, max-age=31536000, immutable');
  else {
    reply.header('cache-control', 'no-cache');
    reply.headers(docs ? DOCS_HEADERS : PAGE_HEADERS);
  }
  return reply.send(r.stream);
}
