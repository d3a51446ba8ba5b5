import type { BackupsCtx } from './backups.audit.js';
import * as store from './backups.store.js';
import { storageOf } from './destination-storage.js';
import { describeFailure } from './failures.js';
import { planRetention } from './retention.js';
import type { Storage } from './storage.js';

/**
 * Retention applied: the policy's runs and the destination's listing go to planRetention (the pure
 * decision, retention.ts), and the runs it picks are deleted, row first, then their artifacts.
 */

type Ctx = BackupsCtx;

/** The folder (key prefix) of a policy's artifacts in its destination. */
export function policyPrefix(run: { orgId: string; projectId: string; policyId: string }): string {
  return `berth/${run.orgId}/${run.projectId}/${run.policyId}/`;
}

/** Prunes the policy's runs per its retention; a listing failure aborts. Never throws. */
export async function pruneRuns(ctx: Ctx, orgId: string, policyId: string): Promise<{ pruned: string[]; aborted?: string }> {
  try {
    const policy = await store.findPolicy(ctx.db, orgId, policyId);
    if (!policy) return { pruned: [] };
    if (policy.retainCount == null && policy.retainDays == null) return { pruned: [] };
    const runs = await store.policyRuns(ctx.db, orgId, policyId);
    const restoring = await store.restoringRunIds(ctx.db, orgId, runs.map((r) => r.id));
    const dest = await store.findDestination(ctx.db, orgId, policy.destinationId);
    let listing: string[] | null = null;
    const storages = new Map<string, Storage>();
    if (dest) {
      try {
        const s = await storageOf(ctx, dest);
        storages.set(dest.id, s);
        listing = await s.list(policyPrefix({ orgId, projectId: policy.projectId, policyId }));
      } catch (e) {
        ctx.log.warn({ policyId, err: describeFailure(e) }, 'backup retention: listing failed; nothing pruned');
        listing = null;
      }
    }
    const plan = planRetention({
      runs: runs.map((r) => ({ id: r.id, status: r.status, protected: r.protected === 1, at: r.finishedAt ?? r.createdAt, artifactKey: r.artifactKey })),
      restoring,
      listing,
      retainCount: policy.retainCount,
      retainDays: policy.retainDays,
      now: new Date(),
    });
    if (plan.aborted) {
      ctx.log.warn({ policyId, reason: plan.aborted }, 'backup retention aborted');
      return { pruned: [], aborted: plan.aborted };
    }
    const pruned: string[] = [];
    const byId = new Map(runs.map((r) => [r.id, r]));
    for (const id of plan.prune) {
      const run = byId.get(id)!;
      if (!(await store.deletePrunableRun(ctx.db, orgId, id))) continue;
      pruned.push(id);
      const keys = [run.artifactKey, run.tempKey].filter((k): k is string => !!k);
      if (keys.length === 0) continue;
      try {
        let s = storages.get(run.destinationId);
        if (!s) {
          const d = await store.findDestination(ctx.db, orgId, run.destinationId);
          if (!d) continue;
          s = await storageOf(ctx, d);
          storages.set(d.id, s);
        }
        for (const k of keys) await s.delete(k);
      } catch (e) {
        ctx.log.warn({ runId: id, err: describeFailure(e) }, 'backup retention: artifact delete failed (orphan left in the destination)');
      }
    }
    return { pruned };
  } catch (e) {
    ctx.log.error({ policyId, err: (e as Error).message }, 'backup retention failed');
    return { pruned: [], aborted: (e as Error).message };
  }
}
