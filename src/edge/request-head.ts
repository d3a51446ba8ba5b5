import type http from 'node:http';
import type { TrustedProxies } from '../lib/trusted-proxies.js';

/** Reading a client request's head, and which of its headers the edge does not pass on. */

export const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);
/**
 * Client headers that name the client: the edge writes its own (`forwarded` it drops), and those one
 * instance's edge sends another's with a request it forwards (src/edge/forward.ts), never to an app.
 */
const CLIENT_ADDRESS_HEADERS = ['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip', 'forwarded', 'x-berth-hop', 'x-berth-client', 'x-berth-proto'];
/** Request headers not passed on to the app. */
export const REQUEST_DROP = new Set([...HOP_BY_HOP, 'expect', ...CLIENT_ADDRESS_HEADERS]);
/** Request headers not passed on with an upgrade (which keeps its `Connection` and `Upgrade`). */
export const UPGRADE_DROP = new Set(['keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'expect', ...CLIENT_ADDRESS_HEADERS]);

/** `Host` header -> lowercase hostname without port or trailing dot; '' when absent or malformed. */
export function hostOf(header: string | undefined): string {
  if (!header || header.length > 300) return '';
  let h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end > 0 ? h.slice(1, end) : '';
  }
  const colon = h.indexOf(':');
  if (colon >= 0) h = h.slice(0, colon);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return /^[a-z0-9.-]+$/.test(h) ? h : '';
}

/** The path prefix of ACME HTTP-01 challenges (RFC 8555 section 8.3), answered by the edge itself on plain HTTP. */
export const ACME_CHALLENGE_PREFIX = '/.well-known/acme-challenge/';

/** The token of an ACME HTTP-01 challenge request-target, or null when it is none (or malformed). */
export function acmeChallengeToken(url: string | undefined): string | null {
  if (!url || !url.startsWith(ACME_CHALLENGE_PREFIX)) return null;
  const q = url.indexOf('?');
  const token = url.slice(ACME_CHALLENGE_PREFIX.length, q >= 0 ? q : undefined);
  return /^[A-Za-z0-9_-]{1,256}$/.test(token) ? token : null;
}

/** The `https://` URL a plain-HTTP request is redirected to: the host, the TLS port unless 443, the request-target. */
export function httpsLocation(host: string, port: number | null, target: string): string {
  const h = host.includes(':') ? `[${host}]` : host;
  return `https://${h}${port === null || port === 443 ? '' : `:${port}`}${target}`;
}

/** A path as the request log keeps it: at most 2048 characters. */
export function logPath(p: string): string {
  return p.length > 2048 ? p.slice(0, 2048) : p;
}

/** The path of a request for the request log (no query string, at most 2048 characters). */
export function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return logPath(q >= 0 ? u.slice(0, q) : u) || '/';
}

/** Does a `Connection` header ask to close? */
export function asksClose(connection: string | undefined): boolean {
  return !!connection && /(?:^|,)\s*close\s*(?:,|$)/i.test(connection);
}

/** Did the request come over the edge's own TLS listener (HTTP/1.1 or HTTP/2)? */
export function isSecure(req: http.IncomingMessage): boolean {
  return (req.socket as { encrypted?: boolean } | null)?.encrypted === true;
}

/** The host a request names: `Host`, else HTTP/2's `:authority`. */
export function hostHeader(req: http.IncomingMessage): string | undefined {
  return req.headers.host ?? (req.headers[':authority'] as string | undefined);
}

/** The X-Forwarded-Proto sent on: `https` over the edge's TLS listener, or when a trusted proxy says so. */
export function forwardedProto(req: http.IncomingMessage, trusted: TrustedProxies): string {
  if (isSecure(req)) return 'https';
  return trusted.size > 0 && req.headers['x-forwarded-proto'] === 'https' && trusted.trusts(req.socket.remoteAddress) ? 'https' : 'http';
}
