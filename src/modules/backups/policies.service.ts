import type { Actor } from '../../authz/actor.js';
import { authorize } from '../../authz/authorize.js';
import { validateCron } from '../../lib/cron.js';
import { sha256Hex } from '../../lib/crypto.js';
import { AppError, conflict, invalid } from '../../lib/errors.js';
import { clockIso } from '../../lib/clock.js';
import { newId, newSecretToken } from '../../lib/ids.js';
import { audit, type BackupsCtx } from './backups.audit.js';
import { policyView } from './backups.presenters.js';
import { destinationRef } from './backups.resolvers.js';
import * as store from './backups.store.js';
import type { DestinationRow, PolicyRow } from './backups.store.js';
import { dataVolume, findTarget } from './project-link.js';
import { requestRunCancel } from './runs.service.js';

/**
 * Backup policies: what to back up (a service of the project, its `data` volume by default), where
 * (a destination the actor may read), when (a cron schedule in a time zone, or only on demand and by
 * webhook) and how long to keep runs. Who may touch a policy is the route's business (its tag and
 * its requirement on the parent project); the rules here are the policy's own.
 */

type Ctx = BackupsCtx;

export interface PolicyBody {
  destinationId?: string;
  serviceId?: string;
  cronExpression?: string | null;
  timezone?: string;
  retainCount?: number | null;
  retainDays?: number | null;
  enabled?: boolean;
  enableWebhook?: boolean;
  rotateWebhookToken?: boolean;
  verifyRestore?: boolean;
}

/** `verifyRestore` needs a service Berth can make a throwaway instance of: a managed one. */
async function checkVerifyRestore(ctx: Ctx, orgId: string, projectId: string, serviceId: string, on: boolean | undefined): Promise<void> {
  if (!on) return;
  const target = await findTarget(ctx.db, orgId, projectId, serviceId);
  if (!target?.managed) throw invalid('verifyRestore', 'verifyRestore needs a managed service (postgres, mysql or redis that Berth runs): the data volume and attached databases have no throwaway instance to restore into');
}

function checkTimezone(tz: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    throw invalid('timezone', `timezone "${tz}" is not a known IANA time zone`);
  }
}

/** The first run of a schedule after `now` (the server's clock), or null when it has none or is off. */
function scheduleNext(expr: string | null, tz: string, enabled: boolean, now: Date): string | null {
  if (!expr) return null;
  const v = validateCron(expr, tz, now);
  if (!v.ok) throw new AppError('INVALID_CRON', `cronExpression is not a valid schedule: ${v.reason}`, { field: 'cronExpression' });
  return enabled ? v.next.toISOString() : null;
}

async function destinationForPolicy(ctx: Ctx, actor: Actor, id: string): Promise<DestinationRow> {
  const dest = await store.findDestination(ctx.db, actor.orgId, id);
  if (!dest) throw new AppError('NOT_FOUND', 'backup destination not found', { field: 'destinationId' });
  authorize(actor, 'backup_destination:read', destinationRef(dest), 'backup destination');
  return dest;
}

function newWebhookToken(): { token: string; hash: string } {
  const token = newSecretToken('berth_bwh');
  return { token, hash: sha256Hex(token) };
}

export async function listPolicies(ctx: Ctx, project: { id: string; orgId: string }) {
  const rows = await store.listPolicies(ctx.db, project.orgId, project.id);
  const now = new Date(ctx.clock.now());
  return rows.map((r) => policyView(r, now));
}

export async function createPolicy(ctx: Ctx, actor: Actor, project: { id: string; orgId: string }, body: PolicyBody & { destinationId: string }) {
  const tz = body.timezone ?? 'UTC';
  checkTimezone(tz);
  const enabled = body.enabled ?? true;
  const nextRunAt = scheduleNext(body.cronExpression ?? null, tz, enabled, new Date(ctx.clock.now()));
  await destinationForPolicy(ctx, actor, body.destinationId);
  let serviceId: string;
  if (body.serviceId) {
    const svc = await findTarget(ctx.db, project.orgId, project.id, body.serviceId);
    if (!svc) throw new AppError('NOT_FOUND', 'service not found in this project', { field: 'serviceId' });
    serviceId = svc.id;
  } else {
    serviceId = (await dataVolume(ctx, project.orgId, project.id)).id;
  }
  await checkVerifyRestore(ctx, project.orgId, project.id, serviceId, body.verifyRestore);
  const hook = body.enableWebhook ? newWebhookToken() : null;
  const now = clockIso(ctx.clock);
  const row: PolicyRow = {
    id: newId('bkp'),
    orgId: project.orgId,
    projectId: project.id,
    destinationId: body.destinationId,
    serviceId,
    cronExpression: body.cronExpression ?? null,
    timezone: tz,
    retainCount: body.retainCount ?? null,
    retainDays: body.retainDays ?? null,
    enabled: enabled ? 1 : 0,
    webhookEnabled: hook ? 1 : 0,
    webhookTokenHash: hook?.hash ?? null,
    createdBy: actor.userId,
    createdAt: now,
    updatedAt: now,
    nextRunAt,
    lastSuccessAt: null,
    verifyRestore: body.verifyRestore ? 1 : 0,
  };
  await store.insertPolicy(ctx.db, row);
  await audit(ctx, actor, row.orgId, 'backup_policy.create', 'project', row.projectId, { policyId: row.id, destinationId: row.destinationId, serviceId: row.serviceId, webhook: !!hook });
  return policyView(row, new Date(ctx.clock.now()), hook?.token);
}

export async function updatePolicy(ctx: Ctx, actor: Actor, row: PolicyRow, body: PolicyBody) {
  const set: Partial<PolicyRow> = { updatedAt: clockIso(ctx.clock) };
  if (body.destinationId !== undefined && body.destinationId !== row.destinationId) {
    await destinationForPolicy(ctx, actor, body.destinationId);
    set.destinationId = body.destinationId;
  }
  const tz = body.timezone ?? row.timezone;
  if (body.timezone !== undefined) {
    checkTimezone(body.timezone);
    set.timezone = body.timezone;
  }
  if (body.retainCount !== undefined) set.retainCount = body.retainCount;
  if (body.retainDays !== undefined) set.retainDays = body.retainDays;
  if (body.enabled !== undefined) set.enabled = body.enabled ? 1 : 0;
  if (body.verifyRestore !== undefined) {
    await checkVerifyRestore(ctx, row.orgId, row.projectId, row.serviceId, body.verifyRestore);
    set.verifyRestore = body.verifyRestore ? 1 : 0;
  }
  const expr = body.cronExpression !== undefined ? body.cronExpression : row.cronExpression;
  if (body.cronExpression !== undefined) set.cronExpression = body.cronExpression;
  const enabled = (set.enabled ?? row.enabled) === 1;
  if (body.cronExpression !== undefined || body.timezone !== undefined || body.enabled !== undefined) {
    set.nextRunAt = scheduleNext(expr, tz, enabled, new Date(ctx.clock.now()));
  }
  let token: string | undefined;
  if (body.enableWebhook === false) {
    if (body.rotateWebhookToken) throw invalid('rotateWebhookToken', 'rotateWebhookToken cannot be combined with enableWebhook: false');
    set.webhookEnabled = 0;
    set.webhookTokenHash = null;
  } else if (body.enableWebhook === true && row.webhookEnabled !== 1) {
    const hook = newWebhookToken();
    set.webhookEnabled = 1;
    set.webhookTokenHash = hook.hash;
    token = hook.token;
  } else if (body.rotateWebhookToken) {
    if (row.webhookEnabled !== 1) throw conflict('the webhook is not enabled on this policy; send enableWebhook: true', 'rotateWebhookToken');
    const hook = newWebhookToken();
    set.webhookTokenHash = hook.hash;
    token = hook.token;
  }
  await store.updatePolicy(ctx.db, row.orgId, row.id, set);
  await audit(ctx, actor, row.orgId, 'backup_policy.update', 'project', row.projectId, { policyId: row.id, fields: Object.keys(body), webhookTokenIssued: !!token });
  return policyView({ ...row, ...set }, new Date(ctx.clock.now()), token);
}

export async function deletePolicy(ctx: Ctx, actor: Actor, row: PolicyRow) {
  const active = await store.findActiveRun(ctx.db, row.orgId, row.id);
  if (active) await requestRunCancel(ctx, active);
  await store.deletePolicy(ctx.db, row.orgId, row.id);
  await audit(ctx, actor, row.orgId, 'backup_policy.delete', 'project', row.projectId, { policyId: row.id });
  return { id: row.id, deleted: true };
}
