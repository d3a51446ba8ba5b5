/** The sweep of expired sessions, superseded sources and leftovers of interrupted uploads. */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { SESSION_TTL_MS, stagedDir, uploadsRoot, type Deps } from './upload-layout.js';
import * as store from './uploads.store.js';

/**
 * Removes expired sessions that never became a source (rows and files), history rows of sources
 * that a newer upload replaced, and leftovers of interrupted uploads. Runs on the scheduler. Expiry is
 * decided by the server's clock (`ctx.clock`); the leftovers' age by the machine's (file times).
 */
export async function sweepUploads(ctx: Deps, now = ctx.clock.now()): Promise<{ expired: number; superseded: number; leftovers: number }> {
  const nowS = new Date(now).toISOString();
  let expired = 0;
  for (const s of await store.listExpired(ctx.db, nowS)) {
    await fsp.rm(stagedDir(ctx, s.id), { recursive: true, force: true });
    await store.deleteSession(ctx.db, s.orgId, s.id);
    expired++;
  }
  const superseded = await store.deleteSuperseded(ctx.db, new Date(now - 24 * 3600 * 1000).toISOString());
  let leftovers = 0;
  const root = uploadsRoot(ctx);
  // Uploads in flight live in .tmp; one older than the session lifetime was interrupted by a crash.
  for (const name of await fsp.readdir(path.join(root, '.tmp')).catch(() => [] as string[])) {
    const p = path.join(root, '.tmp', name);
    const st = await fsp.stat(p).catch(() => null);
    if (st && Date.now() - st.mtimeMs > SESSION_TTL_MS + 60_000) {
      await fsp.rm(p, { recursive: true, force: true });
      leftovers++;
    }
  }
  const staged = await fsp.readdir(path.join(root, '.sessions')).catch(() => [] as string[]);
  const known = await store.knownSessionIds(ctx.db, staged);
  for (const name of staged) {
    if (!known.has(name)) {
      await fsp.rm(path.join(root, '.sessions', name), { recursive: true, force: true });
      leftovers++;
    }
  }
  if (expired || superseded || leftovers) ctx.log.info({ expired, superseded, leftovers }, 'upload sweep');
  return { expired, superseded, leftovers };
}
