import { readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import type { LogStore } from './logs.js';

export interface LogRetention {
  /** Files last written longer ago than this are removed (BERTH_LOG_RETENTION_DAYS). */
  maxAgeMs: number;
  /** Past this many bytes in one app's folder, its oldest files are removed (BERTH_LOG_MAX_MB). */
  maxBytes: number;
}

interface Found {
  file: string;
  size: number;
  mtimeMs: number;
}

/**
 * One pass of log retention over `<dataDir>/logs/projects/*` (docs/logs.md): in each app's folder
 * (its runtime and request logs, their segments, and a project's build logs) every file last written
 * before now - maxAgeMs goes, then the oldest files until the folder holds at most maxBytes. A file
 * still open for writing is closed first (its next line starts a new one). Answers the bytes removed.
 */
export function sweepLogs(store: LogStore, r: LogRetention, now = Date.now()): number {
  const root = path.join(store.dataDir, 'logs', 'projects');
  let removed = 0;
  for (const app of listDir(root)) {
    const dir = path.join(root, app);
    const files = [...filesIn(dir), ...filesIn(path.join(dir, 'builds'))];
    let total = files.reduce((n, f) => n + f.size, 0);
    const drop = (f: Found) => {
      store.openAt(f.file)?.close();
      rmSync(f.file, { force: true });
      removed += f.size;
      total -= f.size;
    };
    const young: Found[] = [];
    for (const f of files) (f.mtimeMs < now - r.maxAgeMs ? drop(f) : young.push(f));
    young.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const f of young) {
      if (total <= r.maxBytes) break;
      drop(f);
    }
  }
  return removed;
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function filesIn(dir: string): Found[] {
  const out: Found[] = [];
  for (const name of listDir(dir)) {
    try {
      const st = statSync(path.join(dir, name));
      if (st.isFile()) out.push({ file: path.join(dir, name), size: st.size, mtimeMs: st.mtimeMs });
    } catch {
      /* removed meanwhile */
    }
  }
  return out;
}
