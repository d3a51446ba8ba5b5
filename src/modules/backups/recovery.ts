import { existsSync } from 'node:fs';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { backupsRuntime } from './backups.runtime.js';
import * as store from './backups.store.js';
import { recoverRestore } from './restore-executor.js';
import { recoverRun } from './run-executor.js';
import { repairVolume } from './volume-archive.js';

/** Crash recovery: what a stop or a dead instance left in flight, found and ended. */

type Ctx = AppContext;

/**
 * Crash recovery: in-flight runs and applying restores become `server_error`. On SQLite the data
 * dir lock guarantees this is the only instance, so everything left is dead. On PostgreSQL (several
 * instances may share it) only rows whose heartbeat stopped more than `staleMs` ago are touched.
 */
export async function recoverStale(ctx: Ctx, staleMs: number | null, includeQueued: boolean): Promise<number> {
  const cutoff = staleMs == null ? null : new Date(Date.now() - staleMs).toISOString();
  const { aborts } = backupsRuntime(ctx);
  let n = 0;
  for (const run of await store.inFlightRuns(ctx.db)) {
    if (aborts.has(run.id)) continue;
    if (run.status === 'queued' && !includeQueued) continue;
    if (cutoff && run.updatedAt > cutoff) continue;
    await recoverRun(ctx, run);
    n++;
  }
  for (const r of await store.applyingRestores(ctx.db)) {
    if (aborts.has(r.id)) continue;
    // Applied but not yet picked up by a worker: like a queued run.
    if (r.runner == null && !includeQueued) continue;
    if (cutoff && r.updatedAt > cutoff) continue;
    await recoverRestore(ctx, r);
    n++;
  }
  return n;
}

/** Start-up sweep: leftovers of restores a stop interrupted (`data.restore-*`, `data/.berth-new-*`, `data/.berth-old-*`; `data.old-*` of older versions). */
export async function sweepVolumes(ctx: Pick<AppContext, 'config'>): Promise<void> {
  const root = path.join(ctx.config.dataDir, 'volumes');
  if (!existsSync(root)) return;
  const { readdir } = await import('node:fs/promises');
  for (const project of await readdir(root)) {
    const dir = path.join(root, project);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue;
    }
    const targets = new Set(names.filter((n) => /\.(old|restore)-/.test(n)).map((n) => n.replace(/\.(old|restore)-.*$/, '')));
    // A swap of contents leaves its folders inside the volume (`.berth-new-*`, `.berth-old-*`).
    for (const n of names) {
      const inner = await readdir(path.join(dir, n)).catch(() => [] as string[]);
      if (inner.some((x) => /^\.berth-(new|old)-/.test(x))) targets.add(n);
    }
    for (const t of targets) await repairVolume(path.join(dir, t)).catch(() => {});
  }
}
