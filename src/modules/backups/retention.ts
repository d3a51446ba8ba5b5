/**
 * Retention as a pure decision, so its invariants can be proved by a property test:
 * - never a protected run, a run in flight, a run being restored, or the newest succeeded run;
 * - a failed listing of the destination, or an empty one while succeeded runs exist, prunes nothing;
 * - `retainCount` counts unprotected succeeded runs (protected ones are kept on top);
 *   `retainDays` prunes runs finished longer ago than that;
 * - terminal runs without an artifact (failed, cancelled, server_error) follow the same two rules
 *   among themselves, so failures do not pile up forever.
 */

export const TERMINAL = ['succeeded', 'failed', 'cancelled', 'server_error'] as const;
export const IN_FLIGHT = ['queued', 'running', 'uploading', 'verifying'] as const;

export function isTerminal(status: string): boolean {
  return (TERMINAL as readonly string[]).includes(status);
}

export interface RetentionRun {
  id: string;
  status: string;
  protected: boolean;
  /** When it finished (or was created, for runs that never finished); ISO-8601. */
  at: string;
  /** The artifact's key when the run succeeded. */
  artifactKey: string | null;
}

export interface RetentionInput {
  runs: RetentionRun[];
  /** Run ids a restore is staged or applying from. */
  restoring: ReadonlySet<string>;
  /** The destination's listing under the policy's prefix, or null when listing failed. */
  listing: string[] | null;
  retainCount: number | null;
  retainDays: number | null;
  now: Date;
}

export interface RetentionPlan {
  prune: string[];
  /** Why nothing was pruned, when pruning was aborted. */
  aborted?: string;
}

function newestFirst(a: RetentionRun, b: RetentionRun): number {
  return a.at < b.at ? 1 : a.at > b.at ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

export function planRetention(input: RetentionInput): RetentionPlan {
  const { runs, restoring, listing, retainCount, retainDays, now } = input;
  const succeeded = runs.filter((r) => r.status === 'succeeded').sort(newestFirst);
  if (listing === null) return { prune: [], aborted: 'the destination could not be listed' };
  if (succeeded.length > 0 && listing.length === 0) return { prune: [], aborted: 'the destination listing came back empty' };
  if (retainCount == null && retainDays == null) return { prune: [] };
  const newest = succeeded[0]?.id;
  const cutoff = retainDays != null ? new Date(now.getTime() - retainDays * 86400000).toISOString() : null;

  const decide = (group: RetentionRun[]): string[] => {
    const out: string[] = [];
    group.forEach((r, i) => {
      const beyondCount = retainCount != null && i >= retainCount;
      const tooOld = cutoff != null && r.at < cutoff;
      if (beyondCount || tooOld) out.push(r.id);
    });
    return out;
  };

  const unprotectedSucceeded = succeeded.filter((r) => !r.protected);
  const failedish = runs.filter((r) => isTerminal(r.status) && r.status !== 'succeeded' && !r.protected).sort(newestFirst);
  const candidates = [...decide(unprotectedSucceeded), ...decide(failedish)];
  const byId = new Map(runs.map((r) => [r.id, r]));
  const prune = candidates.filter((id) => {
    const r = byId.get(id)!;
    return !r.protected && isTerminal(r.status) && !restoring.has(id) && id !== newest;
  });
  return { prune };
}
