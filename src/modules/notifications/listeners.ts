import type { AppContext } from '../../context.js';
import type { SettledDeployment } from '../deployments/index.js';
import type { AppHealthChange, DiskNearLimit } from '../hosting/index.js';
import { projectQueries } from '../projects/index.js';
import { notifyEvent } from './delivery.js';

/**
 * The deployments area's `deploymentSettled` port, as the notifications area listens to it:
 * `deployment.failed` and `deployment.ready` (cancelled and superseded deployments tell nobody).
 */
export async function onDeploymentSettled(ctx: AppContext, d: SettledDeployment): Promise<void> {
  if (d.status !== 'failed' && d.status !== 'ready') return;
  const project = await projectQueries.findProject(ctx.db, d.orgId, d.projectId);
  const name = `${project?.name ?? d.projectId}${d.environment === 'production' ? '' : ` (${d.environment})`}`;
  const what = `Deployment ${d.id}${d.commit ? ` of commit ${d.commit.slice(0, 12)}` : ''}${d.ref ? ` (${d.ref})` : ''}`;
  if (d.status === 'failed') {
    await notifyEvent(ctx, { orgId: d.orgId, event: 'deployment.failed', projectId: d.projectId, subject: `Deployment of ${name} failed`, detail: `${what} failed: ${d.error ?? 'no reason recorded'}`, url: d.url });
  } else {
    await notifyEvent(ctx, { orgId: d.orgId, event: 'deployment.ready', projectId: d.projectId, subject: `${name} is live`, detail: `${what} is ready${d.url ? ` and served at ${d.url}` : ''}.`, url: d.url });
  }
}

/** The hosting area's `appHealthChanged` port: `app.degraded` (with the rollback, when one ran) and `app.recovered`. */
export async function onAppHealthChanged(ctx: AppContext, c: AppHealthChange): Promise<void> {
  const project = await projectQueries.findProject(ctx.db, c.orgId, c.projectId);
  const name = `${project?.name ?? c.projectId}${c.environment === 'production' ? '' : ` (${c.environment})`}`;
  if (c.state === 'degraded') {
    const back = c.rolledBackTo ? ` Its previous release ${c.rolledBackTo} serves again (autoRollback).` : '';
    await notifyEvent(ctx, { orgId: c.orgId, event: 'app.degraded', projectId: c.projectId, subject: `${name} is degraded`, detail: `${c.reason}${c.deploymentId ? ` (deployment ${c.deploymentId})` : ''}.${back}` });
  } else {
    await notifyEvent(ctx, { orgId: c.orgId, event: 'app.recovered', projectId: c.projectId, subject: `${name} recovered`, detail: c.reason });
  }
}

/** The hosting area's `diskNearLimit` port: `disk.near_limit`, once per volume until it went below 80% again. */
export async function onDiskNearLimit(ctx: AppContext, d: DiskNearLimit): Promise<void> {
  const project = await projectQueries.findProject(ctx.db, d.orgId, d.projectId);
  const name = `${project?.name ?? d.projectId}${d.environment === 'production' ? '' : ` (${d.environment})`}`;
  const pct = Math.floor(d.share * 100);
  const then = d.enforced ? 'Writes past it fail (the app gets ENOSPC).' : "This server does not enforce the limit, so it can grow past it and fill the server's disk.";
  const limit = d.service ? "the service's resources.diskMb" : 'resources.production.diskMb';
  const raise = d.service ? `raise the service's diskMb in the project's Services tab` : "raise diskMb in the project's Resources";
  await notifyEvent(ctx, {
    orgId: d.orgId,
    event: 'disk.near_limit',
    projectId: d.projectId,
    subject: d.service ? `The data of service ${d.service} of ${name} is ${pct}% full` : `The volume of ${name} is ${pct}% full`,
    detail: `It holds ${d.usedMb} MB of its ${d.limitMb} MB limit (${limit}). ${then} Remove what is no longer needed, or ${raise}.`,
  });
}
