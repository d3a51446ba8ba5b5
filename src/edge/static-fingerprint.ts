/**
 * Which static files are fingerprinted (a content hash in their name, so a changed file gets a new
 * URL) and may be cached for a year as `immutable`. A false "yes" would pin an ordinary file in
 * browsers for a year, a false "no" only costs a revalidation (a 304), so the heuristic leans to "no".
 *
 * A file is fingerprinted when:
 * - it lies under a folder its framework promises is content-addressed: Next's `/_next/static/`,
 *   SvelteKit's `/_app/immutable/`;
 * - or a token of its name (before the extension) looks like a hash. Tokens are the name's
 *   `.`-separated parts after the first (`main.3f2a1b4c.js`, `main.3f2a1b4c.chunk.js`,
 *   `x.BkL9aQx1.css`), every tail after a `-` (`index-B3xk9a_Q.js`, `chunk-ZGZGH5PW.js`; a Rollup hash
 *   may itself hold a `-`), and the whole first part (`Cj8p2ZfA.js`, judged more strictly).
 *
 * A token looks like a hash (8 to 64 characters of `[A-Za-z0-9_-]`) when it is:
 * - lowercase hex with at least one digit and one letter (webpack, CRA, Angular, Parcel, Hugo);
 * - esbuild's base32: exactly 8 of `[A-Z2-7]` with a digit and 3+ letters (not for a whole name);
 * - mixed case (base64url, Rollup/Vite/Astro/Nuxt) that changes character class (upper, lower, digit,
 *   other) at least every other character, and has a digit or 2+ capitals; a whole name also needs
 *   a digit. CamelCase words (`darkMode`, `HomePage`, `BoldItalic`) change class too rarely; so does
 *   a Rollup hash without digits now and then (`DiwrgTda`): it is revalidated, not pinned;
 * - lowercase letters and digits (base36), 2+ of each, changing class at least every other character
 *   (not `1920x1080`, `v2beta10`).
 */

/** Folders whose every file is content-addressed by the framework that writes them. */
const IMMUTABLE_DIRS = ['/_next/static/', '/_app/immutable/'];

const TOKEN = /^[A-Za-z0-9_-]{8,64}$/;
const HEX = /^[0-9a-f]+$/;
const BASE32 = /^[A-Z2-7]{8}$/;

/** 0 upper, 1 lower, 2 digit, 3 other (`_`, `-`). */
function classOf(c: number): number {
  if (c >= 0x41 && c <= 0x5a) return 0;
  if (c >= 0x61 && c <= 0x7a) return 1;
  if (c >= 0x30 && c <= 0x39) return 2;
  return 3;
}

/** Does a token of a file name look like a content hash? `whole`: the token is the whole name. */
export function looksLikeHash(t: string, whole = false): boolean {
  if (!TOKEN.test(t)) return false;
  let upper = 0;
  let lower = 0;
  let digits = 0;
  let changes = 0;
  let lowerRun = 0;
  let longestLowerRun = 0;
  let prev = -1;
  for (let i = 0; i < t.length; i++) {
    const k = classOf(t.charCodeAt(i));
    if (k === 0) upper++;
    else if (k === 1) lower++;
    else if (k === 2) digits++;
    if (prev >= 0 && k !== prev) changes++;
    lowerRun = k === 1 ? lowerRun + 1 : 0;
    if (lowerRun > longestLowerRun) longestLowerRun = lowerRun;
    prev = k;
  }
  // Changes of character class at least every other character: random text, not words.
  const mixes = changes * 2 >= t.length - 1;
  if (HEX.test(t)) return digits > 0 && lower > 0;
  if (lower === 0) return !whole && BASE32.test(t) && digits > 0 && upper >= 3;
  if (upper > 0) {
    if (whole) return mixes && digits > 0;
    // Words have runs of 3+ lowercase letters; a hash of mostly capitals and digits need not change class often.
    return mixes ? digits > 0 || upper >= 2 : upper >= 3 && longestLowerRun <= 2;
  }
  return mixes && digits >= 2 && lower >= 2;
}

/** Is the file at this URL path (or site-relative file path) fingerprinted? */
export function isFingerprinted(urlPath: string): boolean {
  const p = urlPath.startsWith('/') ? urlPath : '/' + urlPath;
  for (const d of IMMUTABLE_DIRS) if (p.startsWith(d)) return true;
  const name = p.slice(p.lastIndexOf('/') + 1);
  const parts = name.split('.');
  // No extension (or a dotfile): not a build asset.
  if (parts.length < 2 || parts[0] === '') return false;
  parts.pop();
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (i > 0 && looksLikeHash(part)) return true;
    if (i === 0 && looksLikeHash(part, true)) return true;
    for (let j = part.indexOf('-', 1); j > 0 && j < part.length - 1; j = part.indexOf('-', j + 1)) {
      if (looksLikeHash(part.slice(j + 1))) return true;
    }
  }
  return false;
}
