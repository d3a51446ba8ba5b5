import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Actor } from '../../authz/actor.js';
import { authorize, can } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { AppError, conflict, invalid, notFound } from '../../lib/errors.js';
import type { ResolvedResource } from '../../http/route.js';
import { nextCronRun, validateCron } from '../../lib/cron.js';
import { decryptSecret, encryptSecret, safeEqual, sha256Hex } from '../../lib/crypto.js';
import { newId, newSecretToken, nowIso } from '../../lib/ids.js';
import { OutboundRefusedError, isOutboundRefused, outboundPolicy } from '../../lib/outbound.js';
import { insertAuditEvent } from '../audit/audit.store.js';
import { findProject, projectRef } from '../projects/projects.store.js';
import * as store from './backups.store.js';
import type { DestinationRow, PolicyRow, RestoreRow, RunRow } from './backups.store.js';
import { publish } from './events.js';
import { describeStorageError, refusedField } from './failures.js';
import { planRetention } from './retention.js';
import { openStorage, type DestinationConfig, type Storage } from './storage.js';

export const RUN_JOB = 'backups.run';
export const RESTORE_JOB = 'backups.restore';
export const RESTORE_TOKEN_TTL_MS = 15 * 60 * 1000;
export const SECRET_MASK = '********';
export const RUN_TERMINAL = ['succeeded', 'failed', 'cancelled', 'server_error'];

type Ctx = Pick<AppContext, 'db' | 'keyring' | 'jobs' | 'config' | 'log' | 'instanceId' | 'dialect'>;

/** An audit event of the backups area (ids and names only, never a secret); a failure is logged. */
async function audit(ctx: Ctx, actor: Actor | null, orgId: string, action: string, resourceType: string, resourceId: string, details: Record<string, unknown> = {}): Promise<void> {
  await insertAuditEvent(ctx.db, { orgId, actorId: actor?.userId ?? null, action, resourceType, resourceId, details }).catch((e) =>
    ctx.log.warn({ err: (e as Error).message, action }, 'audit event not recorded'),
  );
}

// ================================================================ refs (resolvers)

function underProject(kind: string, id: string, orgId: string, projectId: string, record: unknown): ResolvedResource {
  return { ...projectRef({ id: projectId, orgId }), kind, id, record };
}

export function destinationRef(row: DestinationRow): ResolvedResource {
  return { kind: 'backup_destination', id: row.id, orgId: row.orgId, grantKeys: [{ type: 'backup_destination', id: row.id }], record: row };
}
export const policyRef = (row: PolicyRow) => underProject('backup_policy', row.id, row.orgId, row.projectId, row);
export const runRef = (row: RunRow) => underProject('backup_run', row.id, row.orgId, row.projectId, row);
export const restoreRef = (row: RestoreRow) => underProject('backup_restore', row.id, row.orgId, row.projectId, row);
const parentProject = (row: { orgId: string; projectId: string }) => projectRef({ id: row.projectId, orgId: row.orgId });

// ================================================================ destinations

export interface DestinationBody {
  name?: string;
  kind?: 'local' | 's3';
  path?: string;
  endpoint?: string | null;
  region?: string;
  bucket?: string;
  prefix?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle?: boolean;
}

const secretAad = (id: string) => `backup-destination:${id}:secretAccessKey`;

export function destinationView(row: DestinationRow) {
  const base = { id: row.id, name: row.name, kind: row.kind, createdAt: row.createdAt, updatedAt: row.updatedAt };
  if (row.kind === 'local') return { ...base, path: row.path };
  return {
    ...base,
    endpoint: row.endpoint,
    region: row.region,
    bucket: row.bucket,
    prefix: row.prefix ?? '',
    accessKeyId: row.accessKeyId,
    secretAccessKey: row.secretAccessKey ? SECRET_MASK : null,
    forcePathStyle: row.forcePathStyle === 1,
  };
}

export function destinationConfig(ctx: Pick<AppContext, 'keyring'>, row: DestinationRow): DestinationConfig {
  if (row.kind === 'local') return { kind: 'local', path: row.path! };
  return {
    kind: 's3',
    endpoint: row.endpoint,
    region: row.region || 'us-east-1',
    bucket: row.bucket!,
    prefix: row.prefix ?? '',
    accessKeyId: row.accessKeyId ?? '',
    secretAccessKey: row.secretAccessKey ? decryptSecret(ctx.keyring, row.secretAccessKey, secretAad(row.id)) : '',
    forcePathStyle: row.forcePathStyle === 1,
  };
}

/**
 * Opens a destination. An S3 endpoint is checked again at every use (its host resolved and refused
 * when internal: src/lib/outbound.ts), and every connection the storage then opens is checked too.
 */
export async function storageOf(ctx: Pick<AppContext, 'keyring' | 'config'>, row: DestinationRow): Promise<Storage> {
  const policy = outboundPolicy(ctx.config.hardening.outboundAllow);
  if (row.kind === 's3' && row.endpoint) await policy.resolve(endpointHost(row.endpoint));
  return openStorage(destinationConfig(ctx, row), policy);
}

/** The host of an http(s) endpoint URL (WHATWG parsing: decimal, octal and hex IPv4 become dotted). */
function endpointHost(endpoint: string): string {
  try {
    return new URL(endpoint).hostname;
  } catch {
    throw new OutboundRefusedError('(unparsable URL)', 'invalid');
  }
}

/** The create/update check of an S3 endpoint: a 400 naming `endpoint` when it is (or resolves to) an internal address. */
async function checkEndpoint(ctx: Pick<AppContext, 'config'>, endpoint: string): Promise<void> {
  try {
    await outboundPolicy(ctx.config.hardening.outboundAllow).resolve(endpointHost(endpoint));
  } catch (e) {
    if (e instanceof OutboundRefusedError) throw refusedField(e, 'endpoint');
    throw e;
  }
}

function checkDestinationFields(ctx: Pick<AppContext, 'config'>, kind: string, d: DestinationBody, creating: boolean): void {
  if (kind === 'local') {
    // A folder on the server is for the operator's own instance, not for tenants of a cloud instance.
    if (ctx.config.mode === 'cloud') throw invalid('kind', 'local destinations exist on self-hosted instances only; use an s3 destination');
    if (creating && !d.path) throw invalid('path', 'path is required for a local destination');
    if (d.path !== undefined && !path.isAbsolute(d.path)) throw invalid('path', 'path must be an absolute folder path');
    if (d.path !== undefined && d.path.split(/[\\/]/).includes('..')) throw invalid('path', 'path must not contain ".."');
    if (d.path !== undefined) {
      const p = path.resolve(d.path);
      const data = path.resolve(ctx.config.dataDir);
      const inside = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith(path.sep) ? parent : parent + path.sep);
      if (inside(data, p) || inside(p, path.join(data, 'volumes'))) {
        throw invalid('path', 'path must not contain the data dir nor lie inside its volumes (backups would back themselves up)');
      }
    }
  } else {
    for (const f of ['bucket', 'accessKeyId', 'secretAccessKey'] as const) {
      if (creating && !d[f]) throw invalid(f, `${f} is required for an s3 destination`);
    }
    if (d.bucket !== undefined && !/^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$/.test(d.bucket)) throw invalid('bucket', 'bucket must be a valid bucket name (3-63 lowercase letters, digits, dots, hyphens)');
    if (d.endpoint) {
      let u: URL;
      try {
        u = new URL(d.endpoint);
      } catch {
        throw invalid('endpoint', 'endpoint must be an http(s) URL');
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid('endpoint', 'endpoint must be an http(s) URL');
      if (u.username || u.password) throw invalid('endpoint', 'endpoint must not contain credentials; use accessKeyId and secretAccessKey');
    }
    // With no endpoint the region names the AWS host (s3.<region>.amazonaws.com).
    if (d.region !== undefined && d.region !== '' && !/^[a-z0-9][a-z0-9-]{0,30}[a-z0-9]$/.test(d.region)) throw invalid('region', 'region must be a region name such as us-east-1');
    if (d.prefix !== undefined && d.prefix.split('/').includes('..')) throw invalid('prefix', 'prefix must not contain ".."');
  }
}

export async function listDestinations(ctx: Ctx, actor: Actor) {
  const rows = await store.listDestinations(ctx.db, actor.orgId);
  return rows.filter((r) => can(actor, 'backup_destination:read', destinationRef(r))).map(destinationView);
}

export async function createDestination(ctx: Ctx, actor: Actor, body: DestinationBody & { name: string; kind: 'local' | 's3' }) {
  checkDestinationFields(ctx, body.kind, body, true);
  if (body.kind === 's3' && body.endpoint) await checkEndpoint(ctx, body.endpoint);
  const id = newId('bkd');
  const now = nowIso();
  const row: DestinationRow = {
    id,
    orgId: actor.orgId,
    name: body.name,
    kind: body.kind,
    path: body.kind === 'local' ? path.resolve(body.path!) : null,
    endpoint: body.kind === 's3' ? (body.endpoint ?? null) : null,
    region: body.kind === 's3' ? body.region || 'us-east-1' : null,
    bucket: body.kind === 's3' ? body.bucket! : null,
    prefix: body.kind === 's3' ? (body.prefix ?? '') : null,
    accessKeyId: body.kind === 's3' ? body.accessKeyId! : null,
    secretAccessKey: body.kind === 's3' ? encryptSecret(ctx.keyring, body.secretAccessKey!, secretAad(id)) : null,
    forcePathStyle: body.kind === 's3' && body.forcePathStyle ? 1 : 0,
    createdAt: now,
    updatedAt: now,
  };
  await store.insertDestination(ctx.db, row);
  await audit(ctx, actor, actor.orgId, 'backup_destination.create', 'backup_destination', id, { name: row.name, kind: row.kind });
  return destinationView(row);
}

export async function updateDestination(ctx: Ctx, actor: Actor, row: DestinationRow, body: DestinationBody) {
  if (body.kind !== undefined && body.kind !== row.kind) throw invalid('kind', 'kind cannot change; create a new destination');
  checkDestinationFields(ctx, row.kind, body, false);
  if (row.kind === 's3' && body.endpoint) await checkEndpoint(ctx, body.endpoint);
  const set: Partial<DestinationRow> = { updatedAt: nowIso() };
  if (body.name !== undefined) set.name = body.name;
  if (row.kind === 'local') {
    if (body.path !== undefined) set.path = path.resolve(body.path);
  } else {
    if (body.endpoint !== undefined) set.endpoint = body.endpoint || null;
    if (body.region !== undefined) set.region = body.region || 'us-east-1';
    if (body.bucket !== undefined) set.bucket = body.bucket;
    if (body.prefix !== undefined) set.prefix = body.prefix;
    if (body.accessKeyId !== undefined) set.accessKeyId = body.accessKeyId;
    if (body.secretAccessKey !== undefined && body.secretAccessKey !== SECRET_MASK) {
      if (!body.secretAccessKey) throw invalid('secretAccessKey', 'secretAccessKey must not be empty');
      set.secretAccessKey = encryptSecret(ctx.keyring, body.secretAccessKey, secretAad(row.id));
    }
    if (body.forcePathStyle !== undefined) set.forcePathStyle = body.forcePathStyle ? 1 : 0;
  }
  await store.updateDestination(ctx.db, row.orgId, row.id, set);
  await audit(ctx, actor, row.orgId, 'backup_destination.update', 'backup_destination', row.id, { fields: Object.keys(body).filter((k) => k !== 'secretAccessKey' || set.secretAccessKey) });
  return destinationView({ ...row, ...set });
}

export async function deleteDestination(ctx: Ctx, actor: Actor, row: DestinationRow) {
  const use = await store.destinationUsage(ctx.db, row.orgId, row.id);
  if (use.policies > 0) throw conflict(`the destination is used by ${use.policies} backup polic${use.policies === 1 ? 'y' : 'ies'}; delete or move them first`);
  if (use.runs > 0) throw conflict(`the destination holds ${use.runs} backup run(s) that can still be restored; delete their policies' runs first`);
  await store.deleteDestination(ctx.db, row.orgId, row.id);
  await audit(ctx, actor, row.orgId, 'backup_destination.delete', 'backup_destination', row.id, { name: row.name });
  return { id: row.id, deleted: true };
}

/**
 * Writes, reads back and deletes a probe object. An endpoint that is (or now resolves to) an
 * internal address is a 400 naming `endpoint`, before any request; other failures answer
 * `ok: false` with an error in Berth's words (never the endpoint's own message or body).
 */
export async function testDestination(ctx: Ctx, _actor: Actor, row: DestinationRow) {
  if (row.kind === 's3' && row.endpoint) await checkEndpoint(ctx, row.endpoint);
  const started = Date.now();
  const key = `.berth-probe-${randomBytes(8).toString('hex')}`;
  const payload = randomBytes(1024);
  let storage: Storage;
  try {
    storage = await storageOf(ctx, row);
    if (row.kind === 'local') await mkdir(row.path!, { recursive: true });
    const { Readable } = await import('node:stream');
    await storage.put(key, Readable.from([payload]));
    const back = await storage.get(key);
    const chunks: Buffer[] = [];
    for await (const c of back) chunks.push(c as Buffer);
    const same = Buffer.concat(chunks).equals(payload);
    await storage.delete(key);
    if (!same) return { ok: false, error: 'the probe object read back differs from what was written', latencyMs: Date.now() - started };
    return { ok: true, latencyMs: Date.now() - started };
  } catch (e) {
    // A host that moved to an internal address between the check above and a connection.
    if (e instanceof OutboundRefusedError) throw refusedField(e, 'endpoint');
    if (isOutboundRefused(e)) throw invalid('endpoint', 'endpoint points to an internal address; Berth does not connect there unless BERTH_OUTBOUND_ALLOW lists it');
    ctx.log.info({ destinationId: row.id, errName: (e as Error)?.name, status: (e as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode }, 'backup destination test failed');
    return { ok: false, error: describeStorageError(e), latencyMs: Date.now() - started };
  }
}

// ================================================================ policies

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
}

/** The time between two fires of the schedule after `from`, or null. */
function cronInterval(expr: string, tz: string, from: Date): number | null {
  try {
    const a = nextCronRun(expr, from, tz);
    const b = a ? nextCronRun(expr, a, tz) : null;
    return a && b ? b.getTime() - a.getTime() : null;
  } catch {
    return null;
  }
}

export function policyView(row: PolicyRow, now = new Date(), webhookToken?: string) {
  let overdue = false;
  if (row.enabled === 1 && row.cronExpression) {
    const interval = cronInterval(row.cronExpression, row.timezone, now);
    const since = row.lastSuccessAt ?? row.createdAt;
    if (interval) overdue = now.getTime() - new Date(since).getTime() > 2 * interval;
  }
  return {
    id: row.id,
    projectId: row.projectId,
    destinationId: row.destinationId,
    serviceId: row.serviceId,
    cronExpression: row.cronExpression,
    timezone: row.timezone,
    retainCount: row.retainCount,
    retainDays: row.retainDays,
    enabled: row.enabled === 1,
    webhookEnabled: row.webhookEnabled === 1,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    nextRunAt: row.nextRunAt,
    lastSuccessAt: row.lastSuccessAt,
    overdue,
    ...(webhookToken ? { webhookToken } : {}),
  };
}

function checkTimezone(tz: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    throw invalid('timezone', `timezone "${tz}" is not a known IANA time zone`);
  }
}

function scheduleNext(expr: string | null, tz: string, enabled: boolean): string | null {
  if (!expr) return null;
  const v = validateCron(expr, tz);
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

export async function listPolicies(ctx: Ctx, _actor: Actor, project: { id: string; orgId: string }) {
  const rows = await store.listPolicies(ctx.db, project.orgId, project.id);
  const now = new Date();
  return rows.map((r) => policyView(r, now));
}

export async function createPolicy(ctx: Ctx, actor: Actor, project: { id: string; orgId: string }, body: PolicyBody & { destinationId: string }) {
  const tz = body.timezone ?? 'UTC';
  checkTimezone(tz);
  const enabled = body.enabled ?? true;
  const nextRunAt = scheduleNext(body.cronExpression ?? null, tz, enabled);
  await destinationForPolicy(ctx, actor, body.destinationId);
  let serviceId: string;
  if (body.serviceId) {
    const svc = await store.findService(ctx.db, project.orgId, project.id, body.serviceId);
    if (!svc) throw new AppError('NOT_FOUND', 'service not found in this project', { field: 'serviceId' });
    serviceId = svc.id;
  } else {
    let svc = await store.findServiceByName(ctx.db, project.orgId, project.id, 'data');
    if (!svc) {
      // Every project has the `data` volume (contract section 8); rows made before it existed get it now.
      await store.insertServiceIfMissing(ctx.db, { id: newId('svc'), orgId: project.orgId, projectId: project.id, kind: 'volume', name: 'data', createdAt: nowIso() });
      svc = await store.findServiceByName(ctx.db, project.orgId, project.id, 'data');
    }
    serviceId = svc!.id;
  }
  const hook = body.enableWebhook ? newWebhookToken() : null;
  const now = nowIso();
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
  };
  await store.insertPolicy(ctx.db, row);
  await audit(ctx, actor, row.orgId, 'backup_policy.create', 'project', row.projectId, { policyId: row.id, destinationId: row.destinationId, serviceId: row.serviceId, webhook: !!hook });
  return policyView(row, new Date(), hook?.token);
}

export async function updatePolicy(ctx: Ctx, actor: Actor, row: PolicyRow, body: PolicyBody) {
  authorize(actor, 'project:write', parentProject(row), 'project');
  const set: Partial<PolicyRow> = { updatedAt: nowIso() };
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
  const expr = body.cronExpression !== undefined ? body.cronExpression : row.cronExpression;
  if (body.cronExpression !== undefined) set.cronExpression = body.cronExpression;
  const enabled = (set.enabled ?? row.enabled) === 1;
  if (body.cronExpression !== undefined || body.timezone !== undefined || body.enabled !== undefined) {
    set.nextRunAt = scheduleNext(expr, tz, enabled);
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
  return policyView({ ...row, ...set }, new Date(), token);
}

export async function deletePolicy(ctx: Ctx, actor: Actor, row: PolicyRow) {
  authorize(actor, 'project:admin', parentProject(row), 'project');
  const active = await store.findActiveRun(ctx.db, row.orgId, row.id);
  if (active) await requestRunCancel(ctx, active);
  await store.deletePolicy(ctx.db, row.orgId, row.id);
  await audit(ctx, actor, row.orgId, 'backup_policy.delete', 'project', row.projectId, { policyId: row.id });
  return { id: row.id, deleted: true };
}

// ================================================================ runs

export function runView(row: RunRow) {
  return {
    id: row.id,
    policyId: row.policyId,
    projectId: row.projectId,
    serviceId: row.serviceId,
    destinationId: row.destinationId,
    status: row.status,
    trigger: row.trigger,
    protected: row.protected === 1,
    sizeBytes: row.sizeBytes == null ? null : Number(row.sizeBytes),
    sha256: row.sha256,
    createdAt: row.createdAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    error: row.error,
  };
}

/**
 * Starts a run of the policy, or answers the run already in flight (one at a time per policy).
 * The run row and its job are written in one transaction.
 */
export async function triggerRun(ctx: Ctx, policy: PolicyRow, trigger: 'manual' | 'cron' | 'webhook'): Promise<{ runId: string; created: boolean }> {
  const existing = await store.findActiveRun(ctx.db, policy.orgId, policy.id);
  if (existing) return { runId: existing.id, created: false };
  const now = nowIso();
  const row: RunRow = {
    id: newId('bkr'),
    orgId: policy.orgId,
    policyId: policy.id,
    projectId: policy.projectId,
    serviceId: policy.serviceId,
    destinationId: policy.destinationId,
    status: 'queued',
    trigger,
    protected: 0,
    sizeBytes: null,
    sha256: null,
    artifactKey: null,
    tempKey: null,
    activeKey: policy.id,
    cancelRequested: 0,
    runner: null,
    createdAt: now,
    startedAt: null,
    finishedAt: null,
    error: null,
    updatedAt: now,
  };
  try {
    await transaction(ctx.db, async (tx) => {
      await store.insertRun(tx, row);
      await ctx.jobs.enqueue(RUN_JOB, { id: row.id, orgId: row.orgId }, { db: tx, orgId: row.orgId, maxAttempts: 1 });
    });
    // The enqueue's own wake-up may run before the commit; look again now that the row is visible.
    ctx.jobs.wake();
  } catch (e) {
    if (isUniqueViolation(e)) {
      const again = await store.findActiveRun(ctx.db, policy.orgId, policy.id);
      if (again) return { runId: again.id, created: false };
    }
    throw e;
  }
  return { runId: row.id, created: true };
}

export async function manualRun(ctx: Ctx, actor: Actor, policy: PolicyRow) {
  authorize(actor, 'project:write', parentProject(policy), 'project');
  if (policy.enabled !== 1) throw conflict('the policy is disabled; enable it first');
  return triggerRun(ctx, policy, 'manual');
}

export async function listRuns(ctx: Ctx, _actor: Actor, project: { id: string; orgId: string }, q: { policyId?: string; status?: string; limit?: number }) {
  const rows = await store.listRuns(ctx.db, project.orgId, project.id, { policyId: q.policyId, status: q.status, limit: q.limit ?? 50 });
  return rows.map(runView);
}

export function getRun(_ctx: Ctx, actor: Actor, row: RunRow) {
  authorize(actor, 'project:read', parentProject(row), 'project');
  return runView(row);
}

export async function protectRun(ctx: Ctx, actor: Actor, row: RunRow, locked: boolean) {
  authorize(actor, 'project:write', parentProject(row), 'project');
  await store.updateRun(ctx.db, row.orgId, row.id, { protected: locked ? 1 : 0, updatedAt: nowIso() });
  const fresh = await store.findRun(ctx.db, row.orgId, row.id);
  if (!fresh) throw notFound('backup run');
  return runView(fresh);
}

/** Local abort handles of runs and restores executing in this process. */
export const localAborts = new Map<string, AbortController>();

async function requestRunCancel(ctx: Ctx, row: RunRow): Promise<void> {
  const at = nowIso();
  if (row.status === 'queued') {
    const moved = await store.moveRun(ctx.db, row.orgId, row.id, ['queued'], { status: 'cancelled', activeKey: null, finishedAt: at, updatedAt: at, error: 'cancelled' });
    if (moved) {
      publish(`run:${row.id}`, { type: 'transition', data: { from: 'queued', to: 'cancelled', at } });
      return;
    }
  }
  await store.updateRun(ctx.db, row.orgId, row.id, { cancelRequested: 1 });
  localAborts.get(row.id)?.abort('cancel');
}

export async function cancelRun(ctx: Ctx, actor: Actor, row: RunRow) {
  authorize(actor, 'project:write', parentProject(row), 'project');
  if (RUN_TERMINAL.includes(row.status)) throw conflict(`the run already finished (${row.status})`);
  await requestRunCancel(ctx, row);
  const fresh = await store.findRun(ctx.db, row.orgId, row.id);
  return runView(fresh ?? row);
}

// ================================================================ retention

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
        ctx.log.warn({ policyId, err: describeStorageError(e) }, 'backup retention: listing failed; nothing pruned');
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
        ctx.log.warn({ runId: id, err: describeStorageError(e) }, 'backup retention: artifact delete failed (orphan left in the destination)');
      }
    }
    return { pruned };
  } catch (e) {
    ctx.log.error({ policyId, err: (e as Error).message }, 'backup retention failed');
    return { pruned: [], aborted: (e as Error).message };
  }
}

// ================================================================ restores

export function restoreView(row: RestoreRow) {
  return {
    id: row.id,
    runId: row.runId,
    projectId: row.projectId,
    serviceId: row.serviceId,
    status: row.status,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    appliedAt: row.appliedAt,
    finishedAt: row.finishedAt,
    error: row.error,
  };
}

export async function prepareRestore(ctx: Ctx, actor: Actor, run: RunRow) {
  authorize(actor, 'project:admin', parentProject(run), 'project');
  if (run.status !== 'succeeded' || !run.artifactKey || !run.sha256) throw conflict(`only a succeeded run can be restored (this one is ${run.status})`);
  const dest = await store.findDestination(ctx.db, run.orgId, run.destinationId);
  if (!dest) throw conflict('the run\'s destination no longer exists');
  const { hashPinned } = await import('./engine.js');
  let check: { sha256: string; sizeBytes: number; identity: string | null };
  try {
    check = await hashPinned(await storageOf(ctx, dest), run.artifactKey);
  } catch (e) {
    if (e instanceof OutboundRefusedError) throw refusedField(e, 'endpoint');
    throw conflict(`the artifact could not be read from the destination: ${describeStorageError(e)}`);
  }
  if (check.sha256 !== run.sha256 || (run.sizeBytes != null && check.sizeBytes !== Number(run.sizeBytes))) {
    throw conflict('the artifact in the destination does not match its recorded sha256; it cannot be restored');
  }
  const token = newSecretToken('berth_rst');
  const now = Date.now();
  const row: RestoreRow = {
    id: newId('bks'),
    orgId: run.orgId,
    runId: run.id,
    projectId: run.projectId,
    serviceId: run.serviceId,
    status: 'staged',
    tokenHash: sha256Hex(token),
    cancelRequested: 0,
    runner: null,
    createdBy: actor.userId,
    createdAt: new Date(now).toISOString(),
    expiresAt: new Date(now + RESTORE_TOKEN_TTL_MS).toISOString(),
    appliedAt: null,
    finishedAt: null,
    error: null,
    updatedAt: new Date(now).toISOString(),
    artifactIdentity: check.identity,
  };
  await store.insertRestore(ctx.db, row);
  await audit(ctx, actor, row.orgId, 'backup_restore.prepare', 'project', row.projectId, { restoreId: row.id, runId: run.id });
  return { restoreId: row.id, confirmationToken: token, expiresAt: row.expiresAt };
}

export async function applyRestore(ctx: Ctx, actor: Actor, row: RestoreRow, confirmationToken: string | undefined) {
  authorize(actor, 'project:admin', parentProject(row), 'project');
  if (row.status === 'cancelled' || RUN_TERMINAL.includes(row.status)) throw conflict(`the restore is ${row.status}; prepare a new one`);
  const bad = (msg: string) => new AppError('INVALID_CONFIRMATION_TOKEN', msg, { field: 'confirmationToken' });
  if (row.status === 'applying') throw bad('this confirmation token was already used; prepare again for a fresh token');
  if (!confirmationToken) throw bad('confirmationToken is required: send the token prepare returned');
  if (!safeEqual(sha256Hex(confirmationToken), row.tokenHash)) throw bad('confirmationToken does not match the one prepare returned');
  if (new Date(row.expiresAt).getTime() <= Date.now()) throw bad('the confirmation token expired; prepare again for a fresh token');
  const busy = await store.applyingRestoreOfService(ctx.db, row.orgId, row.serviceId);
  if (busy) throw conflict('another restore of this service is being applied');
  const at = nowIso();
  const moved = await transaction(ctx.db, async (tx) => {
    const ok = await store.moveRestore(tx, row.orgId, row.id, ['staged'], { status: 'applying', appliedAt: at, updatedAt: at });
    if (ok) await ctx.jobs.enqueue(RESTORE_JOB, { id: row.id, orgId: row.orgId }, { db: tx, orgId: row.orgId, maxAttempts: 1 });
    return ok;
  });
  if (moved) ctx.jobs.wake();
  if (!moved) {
    const fresh = await store.findRestore(ctx.db, row.orgId, row.id);
    if (fresh?.status === 'applying') throw bad('this confirmation token was already used; prepare again for a fresh token');
    throw conflict(`the restore is ${fresh?.status ?? 'gone'}; prepare a new one`);
  }
  publish(`restore:${row.id}`, { type: 'transition', data: { from: 'staged', to: 'applying', at } });
  await audit(ctx, actor, row.orgId, 'backup_restore.apply', 'project', row.projectId, { restoreId: row.id, runId: row.runId, serviceId: row.serviceId });
  const fresh = await store.findRestore(ctx.db, row.orgId, row.id);
  return restoreView(fresh!);
}

export async function cancelRestore(ctx: Ctx, actor: Actor, row: RestoreRow) {
  authorize(actor, 'project:admin', parentProject(row), 'project');
  if (row.status === 'cancelled' || RUN_TERMINAL.includes(row.status)) throw conflict(`the restore is already ${row.status}`);
  const at = nowIso();
  if (row.status === 'staged') {
    const moved = await store.moveRestore(ctx.db, row.orgId, row.id, ['staged'], { status: 'cancelled', finishedAt: at, updatedAt: at });
    if (moved) publish(`restore:${row.id}`, { type: 'transition', data: { from: 'staged', to: 'cancelled', at } });
  }
  const now = await store.findRestore(ctx.db, row.orgId, row.id);
  if (now?.status === 'applying') {
    await store.updateRestore(ctx.db, row.orgId, row.id, { cancelRequested: 1 });
    localAborts.get(row.id)?.abort('cancel');
  }
  const fresh = await store.findRestore(ctx.db, row.orgId, row.id);
  return restoreView(fresh ?? row);
}

export function getRestore(_ctx: Ctx, actor: Actor, row: RestoreRow) {
  authorize(actor, 'project:read', parentProject(row), 'project');
  return restoreView(row);
}

// ================================================================ webhook trigger

/** The one answer of every webhook failure: same bytes, no request id. */
export const WEBHOOK_NOT_FOUND = { error: { code: 'NOT_FOUND', message: 'not found' } };

const TOKEN_RE = /^Bearer (berth_bwh_[A-Za-z0-9_-]{20,100})$/;

/** Resolves a webhook credential to its policy, or null for every kind of failure. */
export async function webhookPolicy(ctx: Ctx, authorization: string | undefined): Promise<PolicyRow | null> {
  const m = TOKEN_RE.exec(authorization ?? '');
  // Hash whatever came, so that malformed and wrong tokens cost the same work.
  const presented = sha256Hex(m?.[1] ?? `invalid:${authorization ?? ''}`);
  const row = await store.findPolicyByWebhookHash(ctx.db, presented);
  if (!m || !row || !row.webhookTokenHash) return null;
  if (!safeEqual(row.webhookTokenHash, presented)) return null;
  if (row.webhookEnabled !== 1 || row.enabled !== 1) return null;
  // A policy of a project that moved to the cloud does not run here (see duePolicies).
  const project = await findProject(ctx.db, row.orgId, row.projectId);
  if (!project || project.location === 'cloud') return null;
  return row;
}

/** Fixed-window counter per client address. */
export class RateLimiter {
  private readonly hits = new Map<string, { start: number; n: number }>();
  constructor(
    private readonly limit: number,
    private readonly windowMs = 60000,
  ) {}

  /** Seconds to wait, or 0 when the hit is allowed. */
  hit(key: string, now = Date.now()): number {
    if (this.hits.size > 10000) {
      for (const [k, v] of this.hits) if (now - v.start >= this.windowMs) this.hits.delete(k);
    }
    const cur = this.hits.get(key);
    if (!cur || now - cur.start >= this.windowMs) {
      this.hits.set(key, { start: now, n: 1 });
      return 0;
    }
    cur.n++;
    if (cur.n > this.limit) return Math.max(1, Math.ceil((cur.start + this.windowMs - now) / 1000));
    return 0;
  }
}

// ================================================================ schedules

/** Starts every due cron run once (a schedule missed while down runs once) and moves nextRunAt on. */
export async function runDueSchedules(ctx: Ctx): Promise<number> {
  const now = new Date();
  const due = await store.duePolicies(ctx.db, now.toISOString());
  let started = 0;
  for (const p of due) {
    let next: string | null = null;
    try {
      next = nextCronRun(p.cronExpression!, now, p.timezone)?.toISOString() ?? null;
    } catch {
      next = null;
    }
    if (!(await store.claimNextRun(ctx.db, p.id, p.nextRunAt!, next))) continue;
    try {
      const r = await triggerRun(ctx, p, 'cron');
      if (r.created) started++;
    } catch (e) {
      ctx.log.error({ policyId: p.id, err: (e as Error).message }, 'scheduled backup could not start');
    }
  }
  return started;
}
