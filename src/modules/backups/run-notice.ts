import type { AppContext } from '../../context.js';
import { notifyEvent } from '../notifications/index.js';
import { projectQueries } from '../projects/index.js';
import type { RunRow } from './backups.store.js';

/**
 * Tells the org's notification channels that a backup run failed (contract section 20):
 * `backup.verify_failed` when the artifact read back did not match what was written (the run failed
 * while `verifying`), `backup.failed` otherwise. Cancelled runs and runs a stopping server left tell nobody.
 */
export async function noticeRunFailed(ctx: Pick<AppContext, 'db' | 'jobs' | 'log' | 'clock'>, run: RunRow, phase: string, error: string): Promise<void> {
  const project = await projectQueries.findProject(ctx.db, run.orgId, run.projectId).catch(() => undefined);
  const name = project?.name ?? run.projectId;
  const verify = phase === 'verifying';
  await notifyEvent(ctx, {
    orgId: run.orgId,
    event: verify ? 'backup.verify_failed' : 'backup.failed',
    projectId: run.projectId,
    subject: verify ? `A backup of ${name} failed verification` : `A backup of ${name} failed`,
    detail: `Backup run ${run.id} (policy ${run.policyId}) failed: ${error}`,
  });
}
