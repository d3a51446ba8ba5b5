import { REQUEST_DROP } from '../request-head.js';

/**
 * The heads the edge's fast path reads itself (src/edge/fast/connection.ts, docs/edge.md "The fast
 * path"). On the client's side this is a recognizer, not a parser: it accepts only a strict subset of
 * HTTP/1.1 (a bodiless GET or HEAD whose whole head arrived, well-formed lines, one `Host`) and answers
 * null for everything else, which then goes to node:http (llhttp) as before, so that a request this code
 * is unsure of is judged by the parser that always judged it. On the app's side it reads the answer's
 * head strictly; an answer outside it is a 502.
 */

/** The longest head read (node:http's own default for requests, undici's for answers). */
export const MAX_HEAD = 16 * 1024;

/** RFC 9110 `tchar`: the characters of a header name, by code (below 128). */
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") TCHAR[c.charCodeAt(0)] = 1;

/**
 * The line `s[from, to)` as `name:value`: a token, no space before the colon, a value of visible
 * characters, spaces, tabs and obs-text (no other control character): the colon's index, or -1. A scan
 * of the characters rather than a regular expression per line: no match arrays or substrings made
 * for the lines the fast path only passes on (about a third of what it allocated per request).
 */
function colonOf(s: string, from: number, to: number): number {
  let i = from;
  for (; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c >= 128 || TCHAR[c] === 0) break;
  }
  if (i === from || i === to || s.charCodeAt(i) !== 0x3a) return -1;
  for (let j = i + 1; j < to; j++) {
    const c = s.charCodeAt(j);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return -1;
  }
  return i;
}

/** Is `s[from, to)` a request-target the fast path takes: `/` and visible characters only? */
function isOriginTarget(s: string, from: number, to: number): boolean {
  if (to <= from || s.charCodeAt(from) !== 0x2f) return false;
  for (let i = from + 1; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

/** The end of the line that starts at `from` (the index of its CRLF, or the text's end). */
function lineEnd(s: string, from: number): number {
  const i = s.indexOf('\r\n', from);
  return i < 0 ? s.length : i;
}

/** Is `s[from, to)` a status line's reason phrase (after its space): tabs, spaces, visible characters and obs-text? */
function isReason(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f) return false;
  }
  return true;
}

/** Is `v` 1 to 15 decimal digits? */
function isDecimal(v: string): boolean {
  if (v.length === 0 || v.length > 15) return false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** A header value without the spaces and tabs around it (RFC 9110 OWS; not String.trim, which cuts more). */
export function trimOws(v: string): string {
  let a = 0;
  let b = v.length;
  while (a < b && (v.charCodeAt(a) === 0x20 || v.charCodeAt(a) === 0x09)) a++;
  while (b > a && (v.charCodeAt(b - 1) === 0x20 || v.charCodeAt(b - 1) === 0x09)) b--;
  return a === 0 && b === v.length ? v : v.slice(a, b);
}

/** Does a comma-separated header value hold `token` (case-insensitive)? */
function hasToken(value: string, token: string): boolean {
  return value.toLowerCase().split(',').some((t) => trimOws(t) === token);
}

/** Client headers that send a request to node:http whatever their value (bodies, upgrades, the instances' own hop). */
const NOT_FAST = new Set(['transfer-encoding', 'upgrade', 'expect', 'x-berth-hop', 'x-berth-client', 'x-berth-proto', 'http2-settings']);
/** Client headers the fast path reads: a second one of any sends the request to node:http. */
const READ_ONCE = new Set(['host', 'content-length', 'connection', 'x-forwarded-for', 'x-forwarded-proto']);

export interface SimpleRequest {
  method: 'GET' | 'HEAD';
  /** The request-target as sent (origin-form). */
  target: string;
  host: string;
  forwardedFor: string | undefined;
  forwardedProto: string | undefined;
  /** The client asked to close the connection after this answer. */
  close: boolean;
  /** The header lines the app gets, each ending in CRLF (those in REQUEST_DROP left out). */
  pass: string;
}

/**
 * The request whose head is `buf[0, end)` (`end` the index of its blank line's CRLFCRLF), when it is in
 * the subset the fast path serves; null sends it to node:http.
 */
export function readSimpleRequest(buf: Buffer, end: number): SimpleRequest | null {
  if (end > MAX_HEAD) return null;
  const s = buf.toString('latin1', 0, end);
  // The request line: `GET` or `HEAD`, an origin-form target, HTTP/1.1.
  const first = lineEnd(s, 0);
  const method = s.startsWith('GET ') ? 'GET' : s.startsWith('HEAD ') ? 'HEAD' : null;
  if (!method) return null;
  const from = method.length + 1;
  const space = s.indexOf(' ', from);
  if (space < 0 || first - space !== 9 || !s.startsWith(' HTTP/1.1', space) || !isOriginTarget(s, from, space)) return null;
  let host: string | undefined;
  let forwardedFor: string | undefined;
  let forwardedProto: string | undefined;
  let close = false;
  let pass = '';
  /** READ_ONCE headers met so far (a second one sends the request to node:http). */
  const seen = new Set<string>();
  for (let at = first + 2; at < s.length; ) {
    const to = lineEnd(s, at);
    const colon = colonOf(s, at, to);
    if (colon < 0) return null;
    const name = s.slice(at, colon).toLowerCase();
    if (NOT_FAST.has(name)) return null;
    if (READ_ONCE.has(name)) {
      if (seen.has(name)) return null;
      seen.add(name);
      const value = trimOws(s.slice(colon + 1, to));
      if (name === 'host') host = value;
      else if (name === 'content-length' && value !== '0') return null;
      else if (name === 'connection') {
        if (hasToken(value, 'upgrade')) return null;
        close = hasToken(value, 'close');
      } else if (name === 'x-forwarded-for') forwardedFor = value;
      else if (name === 'x-forwarded-proto') forwardedProto = value;
    }
    if (!REQUEST_DROP.has(name)) pass += to < s.length ? s.slice(at, to + 2) : s.slice(at, to) + '\r\n';
    at = to + 2;
  }
  if (!host) return null;
  return { method, target: s.slice(from, space), host, forwardedFor, forwardedProto, close, pass };
}

/** How an app's answer body is delimited. */
export type Framing = { kind: 'none' } | { kind: 'length'; length: number } | { kind: 'chunked' } | { kind: 'close' };

export interface AnswerHead {
  status: number;
  /** The header lines the client gets, each ending in CRLF (hop-by-hop ones and the framing left out); '' when `fields` is given. */
  pass: string;
  /** The same headers by lowercase name (a repeated one as a list), when asked for (HTTP/2 clients): else null. */
  fields: Record<string, string | string[]> | null;
  /** The app's `Content-Length`, when it sent one. */
  length: number | null;
  framing: Framing;
  /** The connection to the app can carry another request after this answer. */
  reusable: boolean;
  /** How long the app keeps an idle connection open, from its `Keep-Alive: timeout=N` (ms), else null. */
  keepAliveMs: number | null;
  hasDate: boolean;
}

/** Answer headers the client does not get as the app sent them (the edge frames the body itself). */
const ANSWER_DROP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length']);

/** Connection-specific to HTTP/2 as well (RFC 9113 section 8.2.2), left out of `fields`. */
const FIELDS_DROP = 'http2-settings';

/**
 * The head of an app's answer (`buf[0, end)`) to a request of `method`; an Error names what is wrong
 * with it (the client gets a 502). `asFields`: the headers the client gets as an object (`fields`)
 * instead of lines (`pass`).
 */
// Long on purpose: one pass over the answer's lines with the framing rules of RFC 9112 section 6.3 beside it.
export function readAnswerHead(buf: Buffer, end: number, method: string, asFields = false): AnswerHead | Error {
  if (end > MAX_HEAD) return new Error('the answer head is too large');
  const s = buf.toString('latin1', 0, end);
  // `HTTP/1.x NNN` and an optional reason phrase.
  const first = lineEnd(s, 0);
  const minor = s.charCodeAt(7);
  const d0 = s.charCodeAt(9);
  if (
    !s.startsWith('HTTP/1.') || (minor !== 0x30 && minor !== 0x31) || s.charCodeAt(8) !== 0x20 ||
    d0 < 0x31 || d0 > 0x39 || !isDecimal(s.slice(10, 12)) || first < 12 ||
    (first > 12 && (s.charCodeAt(12) !== 0x20 || !isReason(s, 13, first)))
  ) {
    return new Error('malformed status line');
  }
  const status = Number(s.slice(9, 12));
  let reusable = minor === 0x31;
  let length: number | null = null;
  let chunked = false;
  let keepAliveMs: number | null = null;
  let hasDate = false;
  let pass = '';
  const fields: Record<string, string | string[]> | null = asFields ? {} : null;
  for (let at = first + 2; at < s.length; ) {
    const to = lineEnd(s, at);
    const colon = colonOf(s, at, to);
    if (colon < 0) return new Error('malformed header line');
    const name = s.slice(at, colon).toLowerCase();
    const value = trimOws(s.slice(colon + 1, to));
    if (name === 'content-length') {
      if (!isDecimal(value)) return new Error('malformed Content-Length');
      if (length !== null && length !== Number(value)) return new Error('conflicting Content-Length');
      length = Number(value);
    } else if (name === 'transfer-encoding') {
      if (value.toLowerCase() !== 'chunked' || chunked) return new Error(`unsupported Transfer-Encoding ${value}`);
      chunked = true;
    } else if (name === 'connection') {
      if (hasToken(value, 'close')) reusable = false;
    } else if (name === 'keep-alive') {
      const t = /(?:^|,)\s*timeout=(\d+)/i.exec(value);
      if (t) keepAliveMs = Number(t[1]) * 1000;
    } else if (name === 'date') hasDate = true;
    const line = at;
    at = to + 2;
    if (ANSWER_DROP.has(name)) continue;
    if (!fields) pass += to < s.length ? s.slice(line, to + 2) : s.slice(line, to) + '\r\n';
    else if (name !== FIELDS_DROP) {
      const had = fields[name];
      if (had === undefined) fields[name] = value;
      else if (typeof had === 'string') fields[name] = [had, value];
      else had.push(value);
    }
  }
  if (chunked && length !== null) return new Error('both Content-Length and Transfer-Encoding');
  let framing: Framing;
  if (method === 'HEAD' || status < 200 || status === 204 || status === 304) framing = { kind: 'none' };
  else if (chunked) framing = { kind: 'chunked' };
  else if (length !== null) framing = { kind: 'length', length };
  else {
    framing = { kind: 'close' };
    reusable = false;
  }
  return { status, pass, fields, length, framing, reusable, keepAliveMs, hasDate };
}
