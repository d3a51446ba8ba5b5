/**
 * The edge's request-target normaliser (contract section 17, docs/edge.md). Route rules match the
 * normalised path and the app is sent that same path, so no spelling of a path can mean one thing to
 * a rule and another to the app:
 *
 * - percent-escapes of unreserved characters (ALPHA DIGIT - . _ ~) are decoded, other escapes keep
 *   their byte with uppercase hex (`%c3%a9` -> `%C3%A9`); a raw byte outside printable ASCII is escaped;
 * - repeated slashes are merged; `.` and `..` segments are removed (RFC 3986 5.2.4, `..` stops at `/`),
 *   after the decoding, so `%2e%2e` is a `..` too;
 * - an absolute-form target (`http://host/path?q`) is reduced to its path and query;
 * - refused (null, the edge answers 400): `%2F` and `%5C` (an encoded separator), `%00`, a raw `\`,
 *   `#`, a control character or space, a `%` not followed by two hex digits, a `.` or `..` segment
 *   carrying `;` parameters (servlet containers read `/..;/` as `..`), a target that is neither
 *   origin-form nor http(s) absolute-form (`*`, `host:port`).
 *
 * The query string is kept as sent. Comparison stays case-sensitive. A path with nothing to change
 * (nearly every path) is answered as the very string given, without allocating.
 */

/** Per ASCII code: 0 plain, 1 needs the slow path ('%', '/'), 2 refused. Codes >= 0x7F go slow. */
const CLASS = new Uint8Array(128);
for (let c = 0; c < 0x21; c++) CLASS[c] = 2;
CLASS[0x25] = 1; // %
CLASS[0x2f] = 1; // /
CLASS[0x5c] = 2; // \
CLASS[0x23] = 2; // #

/** Unreserved characters (RFC 3986 2.3): decoded when percent-encoded. */
function unreserved(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2e || c === 0x5f || c === 0x7e;
}

/** The value of a hex digit's character code, or -1. */
export function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

const HEX = '0123456789ABCDEF';

/**
 * Does `s[start, end)` need the slow path? 0: no, 1: yes, 2: refused outright. Slow: any `%`, a raw
 * byte >= 0x7F, `//`, or a segment starting with `.` (a possible dot segment).
 */
function scan(s: string, start: number, end: number): 0 | 1 | 2 {
  let slow: 0 | 1 = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x7f) {
      if (c > 0xff) return 2;
      slow = 1;
      continue;
    }
    const k = CLASS[c]!;
    if (k === 0) continue;
    if (k === 2) return 2;
    if (c === 0x25) slow = 1;
    else if (i + 1 < end) {
      const n = s.charCodeAt(i + 1);
      if (n === 0x2f || n === 0x2e) slow = 1;
    }
  }
  return slow;
}

/** One segment's text, decoded as above; null when refused. */
function decodeSegment(s: string, start: number, end: number): string | null {
  let out = '';
  let from = start;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25) {
      if (i + 2 >= end) return null;
      const h = hexValue(s.charCodeAt(i + 1));
      const l = hexValue(s.charCodeAt(i + 2));
      if (h < 0 || l < 0) return null;
      const v = h * 16 + l;
      if (v === 0x2f || v === 0x5c || v === 0) return null;
      out += s.slice(from, i) + (unreserved(v) ? String.fromCharCode(v) : '%' + HEX[h]! + HEX[l]!);
      i += 2;
      from = i + 1;
    } else if (c >= 0x7f) {
      if (c > 0xff) return null;
      out += s.slice(from, i) + '%' + HEX[c >> 4]! + HEX[c & 15]!;
      from = i + 1;
    } else if (CLASS[c] === 2) {
      return null;
    }
  }
  return from === start ? s.slice(start, end) : out + s.slice(from, end);
}

/** `s[start, end)` (starting with '/') normalised; null when refused. */
function normalizeRange(s: string, start: number, end: number): string | null {
  const segs: string[] = [];
  let trailing = false;
  let i = start + 1;
  while (i <= end) {
    let j = s.indexOf('/', i);
    if (j < 0 || j > end) j = end;
    const last = j === end;
    const seg = decodeSegment(s, i, j);
    if (seg === null) return null;
    if (seg === '' || seg === '.') {
      trailing = last;
    } else if (seg === '..') {
      segs.pop();
      trailing = last;
    } else {
      if (seg.charCodeAt(0) === 0x2e && (seg.startsWith('.;') || seg.startsWith('..;'))) return null;
      segs.push(seg);
      trailing = false;
    }
    i = j + 1;
  }
  if (segs.length === 0) return '/';
  return '/' + segs.join('/') + (trailing ? '/' : '');
}

/**
 * A path (no query) normalised, or null when it is refused. Used for route-rule patterns too (`*` and
 * `?` are ordinary characters here). The path must start with `/`.
 */
export function normalizePath(path: string): string | null {
  if (path.charCodeAt(0) !== 0x2f) return null;
  const k = scan(path, 0, path.length);
  if (k === 0) return path;
  if (k === 2) return null;
  return normalizeRange(path, 0, path.length);
}

/**
 * A request-target (`req.url`) as the origin-form the edge matches and forwards: the normalised path
 * and the query string as sent. Null when refused (400).
 */
export function normalizeTarget(url: string): string | null {
  let t = url;
  if (t.charCodeAt(0) !== 0x2f) {
    // absolute-form: http(s)://authority[/path][?query] -> /path?query
    const m = /^https?:\/\//i.exec(t);
    if (!m) return null;
    let p = m[0].length;
    while (p < t.length) {
      const c = t.charCodeAt(p);
      if (c === 0x2f || c === 0x3f) break;
      p++;
    }
    t = p >= t.length ? '/' : t.charCodeAt(p) === 0x3f ? '/' + t.slice(p) : t.slice(p);
  }
  const q = t.indexOf('?');
  const end = q >= 0 ? q : t.length;
  const k = scan(t, 0, end);
  if (k === 0) return t;
  if (k === 2) return null;
  const p = normalizeRange(t, 0, end);
  if (p === null) return null;
  return q >= 0 ? p + t.slice(q) : p;
}

/** The path of a normalised target (without the query string). */
export function pathOfTarget(target: string): string {
  const q = target.indexOf('?');
  return q >= 0 ? target.slice(0, q) : target;
}
