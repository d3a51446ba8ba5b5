/**
 * Route-rule globs without regular expressions (contract section 17, docs/edge.md). `*` matches any
 * run of characters, `/` included; `?` matches one character; everything else matches itself,
 * case-sensitively, over the whole path.
 *
 * The pattern is cut at its `*`s into fixed-length pieces (a `?` is a one-character hole inside a
 * piece). The first piece is anchored at the start, the last at the end, and every piece between is
 * taken at its leftmost place after the previous one: with only `*` between them, the leftmost place
 * never loses a match a later place would have found. No step goes back, so a match costs at most
 * path length x pattern length character comparisons (`indexOf` for pieces without `?`), whatever
 * the pattern: no exponential backtracking as with a regular expression.
 */

/** At most this many wildcards (`*` and `?` together) in a rule's path. */
export const MAX_GLOB_WILDCARDS = 8;

export function countWildcards(pattern: string): number {
  let n = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charCodeAt(i);
    if (c === 0x2a || c === 0x3f) n++;
  }
  return n;
}

export function isGlob(pattern: string): boolean {
  return pattern.includes('*') || pattern.includes('?');
}

interface Piece {
  text: string;
  /** Holds a `?` (compared character by character), else found with indexOf. */
  holes: boolean;
}

/** Does `piece` match `s` at `at` (the caller made sure it fits)? */
function matchesAt(s: string, at: number, p: Piece): boolean {
  const t = p.text;
  if (!p.holes) return s.startsWith(t, at);
  for (let k = 0; k < t.length; k++) {
    const c = t.charCodeAt(k);
    if (c !== 0x3f && c !== s.charCodeAt(at + k)) return false;
  }
  return true;
}

/** The leftmost index >= from where `piece` matches and ends by `limit`, or -1. */
function find(s: string, from: number, limit: number, p: Piece): number {
  const last = limit - p.text.length;
  if (last < from) return -1;
  if (!p.holes) {
    const i = s.indexOf(p.text, from);
    return i >= 0 && i <= last ? i : -1;
  }
  for (let i = from; i <= last; i++) if (matchesAt(s, i, p)) return i;
  return -1;
}

/** A matcher for a glob pattern (any number of wildcards; the cap is enforced where rules are written). */
export function compileGlob(pattern: string): (path: string) => boolean {
  const pieces: Piece[] = pattern.split('*').map((text) => ({ text, holes: text.includes('?') }));
  const first = pieces[0]!;
  if (pieces.length === 1) return (s) => s.length === first.text.length && matchesAt(s, 0, first);
  const lastPiece = pieces[pieces.length - 1]!;
  const middle = pieces.slice(1, -1).filter((p) => p.text.length > 0);
  const fixed = first.text.length + lastPiece.text.length;
  return (s) => {
    const n = s.length;
    if (n < fixed) return false;
    if (!matchesAt(s, 0, first) || !matchesAt(s, n - lastPiece.text.length, lastPiece)) return false;
    let pos = first.text.length;
    const limit = n - lastPiece.text.length;
    for (let k = 0; k < middle.length; k++) {
      const p = middle[k]!;
      const at = find(s, pos, limit, p);
      if (at < 0) return false;
      pos = at + p.text.length;
    }
    return true;
  };
}
