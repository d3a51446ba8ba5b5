import path from 'node:path';
import type { AppContext } from '../../context.js';
import { nowIso } from '../../lib/ids.js';
import { outboundPolicy, postgresUrlHost } from '../../lib/outbound.js';
import * as store from './backups.store.js';
import { serviceConnectionUrl } from './project-link.js';
import { CANCEL } from './runs.service.js';

/**
 * What executing a run and a restore share: how they end early (a user's cancel, the server
 * stopping), the heartbeat that keeps a live one from being swept and notices a cancel asked on
 * another instance, and where a service's data lives (a volume's folder, a database's pinned address).
 */

type Ctx = AppContext;

export class Cancelled extends Error {
  constructor() {
    super('cancelled');
  }
}

/** The abort reason of the server stopping (the job queue's grace ran out); a user's cancel is CANCEL. */
export const STOPPING = 'stopping';
export const stoppedBy = (signal: AbortSignal) => signal.aborted && signal.reason === STOPPING;

/** Folder of a project's volume service. */
export function volumeDir(ctx: Pick<AppContext, 'config'>, projectId: string, name: string): string {
  return path.join(ctx.config.dataDir, 'volumes', path.basename(projectId), path.basename(name));
}

/**
 * The database of a service, checked now (its host resolved and refused when internal, unless
 * BERTH_OUTBOUND_ALLOW lists it) and pinned: pg_dump/pg_restore connect to `hostaddr`, the address
 * that passed the check.
 */
export async function serviceTarget(ctx: Ctx, svc: { orgId: string; projectId: string; id: string }): Promise<{ url: string; hostaddr: string }> {
  const url = await serviceConnectionUrl(ctx, svc.orgId, svc.projectId, svc.id);
  if (!url) throw new Error('the database service has no connection URL');
  const checked = await outboundPolicy(ctx.config.hardening.outboundAllow).resolve(postgresUrlHost(url));
  return { url, hostaddr: checked.addresses[0]!.address };
}

/**
 * Watches for cancel requests of another instance (the row's flag) and keeps the row's heartbeat
 * (updatedAt) fresh, so a sweep can tell a dead run from a live one.
 */
export function watch(ctx: Ctx, kind: 'run' | 'restore', orgId: string, id: string, abort: AbortController): () => void {
  const timer = setInterval(() => {
    void (async () => {
      try {
        if (await store.heartbeat(ctx.db, kind, orgId, id, nowIso())) abort.abort(CANCEL);
      } catch {
        /* the next beat tries again */
      }
    })();
  }, 1000);
  timer.unref();
  return () => clearInterval(timer);
}
