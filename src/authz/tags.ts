/**
 * Permission tags: `<resource>:<level>` or `<resource>:<sub>:<level>`, with levels
 * list < read < write < admin (a higher level implies the lower ones).
 */
export const LEVELS = ['list', 'read', 'write', 'admin'] as const;
export type Level = (typeof LEVELS)[number];

export interface Tag {
  resource: string;
  sub?: string;
  level: Level;
}

const TAG_RE = /^([a-z_]+)(?::([a-z_]+))?:(list|read|write|admin)$/;

export function isTag(s: string): boolean {
  return TAG_RE.test(s);
}

export function parseTag(s: string): Tag {
  const m = TAG_RE.exec(s);
  if (!m) throw new Error(`not a permission tag: ${s}`);
  return { resource: m[1]!, sub: m[2] || undefined, level: m[3] as Level };
}

export function levelRank(l: Level): number {
  return LEVELS.indexOf(l);
}

export function levelAtLeast(have: Level, need: Level): boolean {
  return levelRank(have) >= levelRank(need);
}

/** The highest level in a permissions array such as ["read", "write"], or undefined. */
export function maxLevel(perms: readonly string[]): Level | undefined {
  let best: Level | undefined;
  for (const p of perms) {
    if ((LEVELS as readonly string[]).includes(p) && (!best || levelRank(p as Level) > levelRank(best))) best = p as Level;
  }
  return best;
}

/**
 * Does holding `held` imply `need`? Same resource; a held tag without a sub covers every sub of
 * its resource; a held sub covers only that sub; the held level must be at least the needed one.
 */
export function tagCovers(held: Tag, need: Tag): boolean {
  if (held.resource !== need.resource) return false;
  if (held.sub && held.sub !== need.sub) return false;
  return levelAtLeast(held.level, need.level);
}
