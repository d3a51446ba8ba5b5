import type http from 'node:http';
import { isIP } from 'node:net';
import type { Dispatcher } from 'undici';
import { safeEqual } from '../lib/crypto.js';
import type { EdgeUpstream } from './backend.js';
import { page } from './error-page.js';
import { HOP_BY_HOP, REQUEST_DROP } from './request-head.js';
import type { UpstreamPools } from './upstream-pools.js';

/**
 * Several Berth instances on one PostgreSQL (docs/scale-out.md): one instance runs each app, and the
 * others' edges forward its requests to that instance's edge, as they came (method, target, `Host`,
 * body and answer streamed, WebSocket upgrades tunnelled), with three headers of their own:
 *
 * - `x-berth-hop`: a secret derived from the shared secret key, proving the request comes from an
 *   instance's edge. A request carrying it is never forwarded again (no loops), and only with it are
 *   the next two believed; the edge drops all three before anything reaches an app.
 * - `x-berth-client`: the client's address as the first edge saw it (route rules and the request log
 *   see the client, not the other instance).
 * - `x-berth-proto`: `https` when the client came over TLS (no redirect to https, HSTS is sent).
 *
 * The instance that runs the app does everything else once (rules, redirects, the request log).
 */

export const HOP_HEADER = 'x-berth-hop';
export const HOP_CLIENT_HEADER = 'x-berth-client';
export const HOP_PROTO_HEADER = 'x-berth-proto';

/** What a forwarded request says about its client, once its hop token is checked. */
export interface Hop {
  ip: string;
  secure: boolean;
}

/** The hop of a request another instance's edge forwarded (its token matches `token`), else null. */
export function readHop(req: http.IncomingMessage, token: string | undefined): Hop | null {
  if (!token) return null;
  const h = req.headers[HOP_HEADER];
  if (typeof h !== 'string' || !safeEqual(h, token)) return null;
  const ip = req.headers[HOP_CLIENT_HEADER];
  if (typeof ip !== 'string' || isIP(ip) === 0) return null;
  return { ip, secure: req.headers[HOP_PROTO_HEADER] === 'https' };
}

/** The headers a forwarded request carries besides the client's own. */
export function hopHeaders(token: string, ip: string, secure: boolean): [string, string][] {
  return [
    [HOP_HEADER, token],
    [HOP_CLIENT_HEADER, ip],
    [HOP_PROTO_HEADER, secure ? 'https' : 'http'],
  ];
}

/**
 * Sends one request to the edge of the instance that runs its app and streams the answer back. The
 * request is not logged here (the other edge logs it). When that edge cannot be reached, a 503 with
 * `Retry-After` (its lease runs out within seconds and this instance takes the app over).
 */
export function forwardToPeer(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  peer: EdgeUpstream,
  pools: UpstreamPools,
  undici: typeof import('undici'),
  hop: { token: string; ip: string; secure: boolean; authority: string | undefined },
  onError: (err: Error) => void,
): void {
  const headers: Record<string, string | string[]> = {};
  for (const k in req.headers) {
    const v = req.headers[k];
    if (v !== undefined && !REQUEST_DROP.has(k) && k.charCodeAt(0) !== 58 /* ':' HTTP/2 pseudo-headers */) headers[k] = v;
  }
  if (headers.host === undefined && hop.authority !== undefined) headers.host = hop.authority;
  for (const [k, v] of hopHeaders(hop.token, hop.ip, hop.secure)) headers[k] = v;
  res.once('close', () => {
    if (!res.writableFinished) res.emit('abort');
  });
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && (req.headers['content-length'] !== undefined ? req.headers['content-length'] !== '0' : req.headers['transfer-encoding'] !== undefined);
  pools.get(peer, undici).stream(
    { path: req.url ?? '/', method: (req.method ?? 'GET') as Dispatcher.HttpMethod, headers, body: hasBody ? req : null, signal: res as unknown as AbortSignal },
    ({ statusCode, headers: upHeaders }) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const k in upHeaders) if (!HOP_BY_HOP.has(k)) out[k] = upHeaders[k];
      res.writeHead(statusCode, out);
      return res;
    },
    (err) => {
      if (!err) return;
      onError(err);
      if (res.headersSent) return void res.destroy();
      const body = page('Project unavailable', 'The Berth instance running this app did not answer; try again in a moment.');
      res.writeHead(503, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store', 'retry-after': '2' });
      res.end(body);
    },
  );
}
