/**
 * Workspace member patterns (`apps/*`, `packages/**`, `crates/api`), as npm, pnpm, yarn and Cargo
 * write them, expanded into the folders they name. `*` and `?` match within one folder name, `**`
 * any depth (at most 6 levels); `..`, absolute patterns, hidden folders and the ignored ones
 * (`node_modules`, `target`, ...) never match. A scan of a large tree stays bounded (500 folders).
 */
import path from 'node:path';
import { IGNORED_DIRS } from './detect.rules.js';
import { listDir } from './facts.js';

const MAX_DEPTH = 6;
const MAX_FOLDERS = 500;

function segmentPattern(seg: string): RegExp {
  return new RegExp('^' + seg.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$');
}

/** The folders (relative to `root`, sorted) a pattern names; none for `..` or an absolute pattern. */
export function globFolders(root: string, pattern: string): string[] {
  if (pattern.includes('..') || path.isAbsolute(pattern)) return [];
  const out = new Set<string>();
  const subdirs = (rel: string) => listDir(path.join(root, rel)).dirs.filter((d) => !IGNORED_DIRS.has(d) && !d.startsWith('.'));
  const join = (rel: string, d: string) => (rel ? `${rel}/${d}` : d);
  const walk = (rel: string, segs: string[], depth: number): void => {
    if (depth > MAX_DEPTH || out.size >= MAX_FOLDERS) return;
    if (!segs.length) {
      if (rel) out.add(rel);
      return;
    }
    const [seg, ...rest] = segs as [string, ...string[]];
    if (seg === '.' || seg === '') return walk(rel, rest, depth);
    if (seg === '**') {
      walk(rel, rest, depth);
      for (const d of subdirs(rel)) walk(join(rel, d), segs, depth + 1);
      return;
    }
    if (/[*?]/.test(seg)) {
      const re = segmentPattern(seg);
      for (const d of subdirs(rel)) if (re.test(d)) walk(join(rel, d), rest, depth + 1);
      return;
    }
    if (IGNORED_DIRS.has(seg)) return;
    walk(join(rel, seg), rest, depth + 1);
  };
  walk('', pattern.replace(/^\.\//, '').replace(/\/+$/, '').split('/'), 0);
  return [...out].sort();
}
