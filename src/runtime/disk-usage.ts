import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * `info.runtime.disk` (contract 18) of a volume that is not on its size-limited image (disk-limits.ts
 * answers from statfs when it is): its limit (`resources.production.diskMb`) and what it holds,
 * measured by a bounded walk, kept 30 s per folder (docs/runtime.md "Disk limits").
 */

export interface DiskUsage {
  limitMb: number;
  usedMb: number;
  enforced: boolean;
  note?: string;
  /** What the volume's filesystem holds in all (its image, when enforced): a little under limitMb (ext4's own blocks). Not in `info`. */
  sizeMb?: number;
}

const NOTE = 'diskMb is not enforced for this volume: writes past it are not refused (docs/runtime.md "Disk limits")';
const WALK_LIMIT = 100_000;
const walked = new Map<string, { mb: number; at: number }>();

/** `fresh`: walk now whatever was kept (the disk watch, every few minutes); the walk is kept for the next reader. */
export async function volumeUsage(dir: string, limitMb: number, fresh = false): Promise<DiskUsage> {
  const cached = walked.get(dir);
  let usedMb: number;
  if (!fresh && cached && Date.now() - cached.at < 30_000) usedMb = cached.mb;
  else {
    usedMb = await walkMb(dir);
    walked.set(dir, { mb: usedMb, at: Date.now() });
    if (walked.size > 10_000) walked.clear();
  }
  return { limitMb, usedMb, enforced: false, note: NOTE };
}

/** Bytes of the blocks below `dir` in MB, links not followed, at most 100 000 entries. */
async function walkMb(dir: string): Promise<number> {
  let bytes = 0;
  let seen = 0;
  const walk = async (d: string): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(d);
    } catch {
      return;
    }
    for (const n of names) {
      if (++seen > WALK_LIMIT) return;
      const p = path.join(d, n);
      try {
        const st = await lstat(p);
        if (st.isDirectory()) await walk(p);
        else bytes += st.blocks * 512;
      } catch {
        /* gone meanwhile */
      }
    }
  };
  await walk(dir);
  return Math.round(bytes / 1024 ** 2);
}
