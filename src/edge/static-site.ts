import type http from 'node:http';
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import negotiate from '@fastify/accept-negotiator';
import { createRequire } from 'node:module';
import type SendModule from '@fastify/send';
import type { StaticSite } from './backend.js';
import { BAD_PATH, page } from './error-page.js';
import { isFingerprinted } from './static-fingerprint.js';
import { isCompressible } from './static-prepare.js';

/** @fastify/send, loaded when a static site is first served, not at start (docs/decisions.md, "Memory and authenticated reads again"). */
const requireCjs = createRequire(import.meta.url);
const sendLib = (): typeof SendModule => requireCjs('@fastify/send') as typeof SendModule;

/**
 * Static sites: the edge serves a static deployment's files itself (no process). The folder is one
 * `prepareStaticSite` filled (regular files only, `.br`/`.gz` variants beside compressible ones);
 * `@fastify/send` does the file serving proper: ETag and Last-Modified, conditional requests (304,
 * 412), Range (206, 416), HEAD.
 */

export type { StaticSite } from './backend.js';
export { prepareStaticSite, isCompressible, type PreparedSite, type PrepareOptions } from './static-prepare.js';
export { isFingerprinted, looksLikeHash } from './static-fingerprint.js';

/** Told once per request: the status answered, the body bytes sent, and an unexpected error (a 500, or a stream cut short). */
export type StaticDone = (status: number, bytes: number, error?: Error) => void;

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'public, max-age=0, must-revalidate';

/** The Content-Type of a file name: send's mime table, with `charset=utf-8` for text. */
export function contentTypeOf(name: string): string {
  const send = sendLib();
  const type = send.mime.getType(name) ?? 'application/octet-stream';
  return send.isUtf8MimeType(type) ? `${type}; charset=utf-8` : type;
}

/** Cache-Control for a site file: `no-cache` for HTML, a year and `immutable` for fingerprinted names, else revalidate every time. */
export function cacheControlFor(rel: string, contentType = contentTypeOf(rel)): string {
  if (contentType.startsWith('text/html') || contentType.startsWith('application/xhtml+xml')) return 'no-cache';
  return isFingerprinted(rel) ? IMMUTABLE : REVALIDATE;
}

type Answer = { status: number; bytes: number };

type Resolved = { kind: 'file'; rel: string; size: number } | { kind: 'redirect'; status: 301 | 308; location: string } | { kind: 'missing'; hidden: boolean };

/** A regular file's size, 'dir' for a folder, null for nothing (or a link, which a prepared site never holds). */
async function statAt(root: string, rel: string): Promise<number | 'dir' | null> {
  try {
    const st = await lstat(path.join(root, rel));
    return st.isFile() ? st.size : st.isDirectory() ? 'dir' : null;
  } catch {
    return null;
  }
}

/** The path as file names: decoded, refused (null) with a NUL, a backslash or a dot segment. */
function decodePath(p: string): string | null {
  if (!p.startsWith('/')) return null;
  let d: string;
  try {
    d = decodeURIComponent(p);
  } catch {
    return null;
  }
  if (d.includes('\0') || d.includes('\\')) return null;
  for (const seg of d.split('/')) if (seg === '..' || seg === '.') return null;
  return d;
}

/** A dotfile or dot-folder anywhere in the path, except a first segment `.well-known`. */
function isHidden(decoded: string): boolean {
  const segs = decoded.split('/');
  for (let i = 1; i < segs.length; i++) if (segs[i]!.startsWith('.') && !(i === 1 && segs[i] === '.well-known')) return true;
  return false;
}

/** Does the last segment of a path have a file extension (`app.js`, not `users`, `.env` or `/`)? */
function hasExtension(decoded: string): boolean {
  const last = decoded.slice(decoded.lastIndexOf('/') + 1);
  return last.lastIndexOf('.') > 0;
}

/**
 * The file a path names. `decoded` is the path as file names, `encoded` the normalised path as sent
 * (redirects are built from it) and `query` the query string with its `?` (kept by redirects).
 */
async function resolveFile(site: StaticSite, decoded: string, encoded: string, query: string): Promise<Resolved> {
  if (isHidden(decoded)) return { kind: 'missing', hidden: true };
  const missing: Resolved = { kind: 'missing', hidden: false };
  const file = async (rel: string): Promise<Resolved | null> => {
    const s = await statAt(site.root, rel);
    return typeof s === 'number' ? { kind: 'file', rel, size: s } : null;
  };
  // `/` and `/docs/`: the folder's index.html.
  if (decoded.endsWith('/')) return (await file(decoded.slice(1) + 'index.html')) ?? missing;
  const rel = decoded.slice(1);
  const s = await statAt(site.root, rel);
  if (typeof s === 'number') {
    if (site.cleanUrls && rel.endsWith('.html')) {
      const base = rel.slice(0, -'.html'.length);
      // `/docs/index.html` -> `/docs/`, `/index.html` -> `/`
      if (base === 'index' || base.endsWith('/index')) return { kind: 'redirect', status: 308, location: encoded.slice(0, -'index.html'.length) + query };
      // `/about.html` -> `/about`, unless `/about` is a file of its own (then this one stays reachable here).
      if (typeof (await statAt(site.root, base)) !== 'number') return { kind: 'redirect', status: 308, location: encoded.slice(0, -'.html'.length) + query };
    }
    return { kind: 'file', rel, size: s };
  }
  if (site.cleanUrls) {
    const html = await file(rel + '.html');
    if (html) return html;
    if (s === 'dir') return (await file(rel + '/index.html')) ?? missing;
    return missing;
  }
  // A folder without the trailing slash: redirected to it (relative links in its index.html need it).
  if (s === 'dir' && (await file(rel + '/index.html'))) return { kind: 'redirect', status: 301, location: encoded + '/' + query };
  return missing;
}

/** One of the edge's own pages (405, the Berth 404, redirects, errors). */
function answerPage(req: http.IncomingMessage, res: http.ServerResponse, status: number, title: string, text: string, headers: Record<string, string> = {}): Answer {
  const body = page(title, text);
  const len = Buffer.byteLength(body);
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(len), 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...headers });
  if (req.method === 'HEAD') {
    res.end();
    return { status, bytes: 0 };
  }
  res.end(body);
  return { status, bytes: len };
}

function notFoundPage(req: http.IncomingMessage, res: http.ServerResponse): Answer {
  return answerPage(req, res, 404, 'Not found', 'Nothing is published at this address.');
}

/** `a b/c%.js` -> `/a%20b/c%25.js`: the URL path send decodes back to the file name. */
function encodeRel(rel: string): string {
  return '/' + rel.split('/').map(encodeURIComponent).join('/');
}

/**
 * Sends the site file `rel` (`size` bytes): its `.br` or `.gz` variant when the client accepts that
 * encoding and the variant exists, with the Content-Type of `rel` itself. `notFound`: the site's
 * 404.html, answered 404 (no conditional requests, ranges or validators then).
 */
async function sendFile(req: http.IncomingMessage, res: http.ServerResponse, site: StaticSite, rel: string, size: number, notFound: boolean): Promise<Answer> {
  const compressible = isCompressible(rel, size);
  let encoding: 'br' | 'gzip' | null = null;
  const accept = req.headers['accept-encoding'];
  if (compressible && accept) {
    const header = accept.toLowerCase();
    encoding = negotiate(header, ['br', 'gzip'] as const);
    if (encoding === 'br' && typeof (await statAt(site.root, rel + '.br')) !== 'number') encoding = negotiate(header, ['gzip'] as const);
    if (encoding === 'gzip' && typeof (await statAt(site.root, rel + '.gz')) !== 'number') encoding = null;
  }
  const served = encoding === 'br' ? `${rel}.br` : encoding === 'gzip' ? `${rel}.gz` : rel;
  // For the 404 page, the request's validators and Range do not apply (a 404 is never a 304 or a 206).
  const request = notFound ? ({ method: req.method, headers: {} } as unknown as Readable) : req;
  const r = await sendLib()(request, encodeRel(served), {
    root: site.root,
    index: false,
    dotfiles: 'allow',
    cacheControl: false,
    contentType: false,
    acceptRanges: !notFound,
    etag: !notFound,
    lastModified: !notFound,
  });
  if (r.type !== 'file') {
    r.stream.destroy();
    const status = r.type === 'error' ? ((r.metadata.error as Error & { status?: number }).status ?? r.statusCode) : 404;
    if (status === 416) return answerPage(req, res, 416, 'Range not satisfiable', 'The requested range lies outside the file.', { 'content-range': r.headers['Content-Range'] ?? `bytes */${size}` });
    if (status === 412) return answerPage(req, res, 412, 'Precondition failed', 'The file does not match the request\'s conditions.');
    // The file went away since it was found (the deployment was replaced): as if it never was.
    if (status === 404) return notFoundPage(req, res);
    throw r.type === 'error' ? r.metadata.error : new Error(`send answered ${r.type}`);
  }
  const status = notFound ? 404 : r.statusCode;
  const type = contentTypeOf(rel);
  const headers: http.OutgoingHttpHeaders = {};
  for (const k in r.headers) headers[k.toLowerCase()] = r.headers[k];
  if (status !== 304) {
    headers['content-type'] = type;
    if (encoding) headers['content-encoding'] = encoding;
  }
  if (compressible) headers['vary'] = 'Accept-Encoding';
  headers['cache-control'] = notFound ? 'no-cache' : cacheControlFor(rel, type);
  headers['x-content-type-options'] = 'nosniff';
  res.writeHead(status, headers);
  if (req.method === 'HEAD' || status === 304) {
    r.stream.destroy();
    res.end();
    return { status, bytes: 0 };
  }
  let bytes = 0;
  r.stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
  try {
    await pipeline(r.stream, res);
  } catch {
    // The client went away (or the read failed) mid-body: the connection is cut.
    res.destroy();
  }
  return { status, bytes };
}

async function answer(req: http.IncomingMessage, res: http.ServerResponse, site: StaticSite, target: string): Promise<Answer> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return answerPage(req, res, 405, 'Method not allowed', 'This is a static site: it answers GET and HEAD only.', { allow: 'GET, HEAD' });
  }
  const q = target.indexOf('?');
  const encoded = q >= 0 ? target.slice(0, q) : target;
  const query = q >= 0 ? target.slice(q) : '';
  const decoded = decodePath(encoded);
  if (decoded === null) return answerPage(req, res, 400, 'Bad request', BAD_PATH);
  const found = await resolveFile(site, decoded, encoded, query);
  if (found.kind === 'file') return sendFile(req, res, site, found.rel, found.size, false);
  if (found.kind === 'redirect') {
    return answerPage(req, res, found.status, 'Moved', `This page is at ${found.location}.`, { location: found.location, 'cache-control': 'no-cache' });
  }
  // Nothing there: a single-page app answers its index.html for app routes (no extension), ...
  if (site.spa && !found.hidden && !hasExtension(decoded)) {
    const index = await statAt(site.root, 'index.html');
    if (typeof index === 'number') return sendFile(req, res, site, 'index.html', index, false);
  }
  // ... else the site's own 404.html, else Berth's.
  const custom = await statAt(site.root, '404.html');
  if (typeof custom === 'number') return sendFile(req, res, site, '404.html', custom, true);
  return notFoundPage(req, res);
}

/**
 * Answers a request for a static site from its files (the edge calls it after the route rules).
 * `target` is the normalised request-target (`normalizeTarget`: path and query). GET and HEAD only
 * (else 405). The path is decoded and refused (400) with a NUL or dot segment; dotfiles are hidden
 * except under `/.well-known/`. `cleanUrls`: `/about` serves `about.html` or `about/index.html`, and
 * `/about.html` redirects 308 to `/about` (query kept); without it, a folder without its trailing
 * slash redirects 301 to it. A path with no file: `index.html` (200) for a SPA when its last segment
 * has no extension, else the site's `404.html` (404), else Berth's 404 page. Files go with ETag,
 * Last-Modified, the negotiated `.br`/`.gz` variant (`Content-Encoding`, `Vary: Accept-Encoding`),
 * `Cache-Control` (`cacheControlFor`) and `X-Content-Type-Options: nosniff`. Never throws: `done` is
 * told the outcome exactly once.
 */
export async function serveStatic(req: http.IncomingMessage, res: http.ServerResponse, site: StaticSite, target: string, done: StaticDone): Promise<void> {
  let result: Answer;
  let error: Error | undefined;
  try {
    result = await answer(req, res, site, target);
  } catch (e) {
    error = e instanceof Error ? e : new Error(String(e));
    if (!res.headersSent) result = answerPage(req, res, 500, 'Edge error', 'The edge could not read this site\'s files.');
    else {
      res.destroy();
      result = { status: res.statusCode, bytes: 0 };
    }
  }
  done(result.status, result.bytes, error);
}
