import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../http/schemas.js';
import { nextCronRun } from '../../lib/cron.js';
import type { DestinationRow, PolicyRow, RestoreRow, RunRow } from './backups.store.js';

/**
 * Rows of the backups area as the API shows them, and the TypeBox schemas of those shapes (the
 * routes' `schema.response`: the server serialises by them, so a field not listed here never leaves).
 * Secrets never appear: a destination's secret key is masked, a webhook token shows once.
 */

export const SECRET_MASK = '********';

const Time = Type.String({ description: 'ISO-8601 timestamp' });

// ---------------------------------------------------------------- destinations

const DestinationBase = {
  id: Type.String(),
  name: Type.String(),
  createdAt: Time,
  updatedAt: Time,
};

export const LocalDestination = Type.Object({ ...DestinationBase, kind: Type.Literal('local'), path: Nullable(Type.String()) }, { title: 'LocalBackupDestination' });

export const S3Destination = Type.Object(
  {
    ...DestinationBase,
    kind: Type.Literal('s3'),
    endpoint: Nullable(Type.String()),
    region: Nullable(Type.String()),
    bucket: Nullable(Type.String()),
    prefix: Type.String(),
    accessKeyId: Nullable(Type.String()),
    /** Always the mask (or null): the key itself is never returned. */
    secretAccessKey: Nullable(Type.String()),
    forcePathStyle: Type.Boolean(),
  },
  { title: 'S3BackupDestination' },
);

export const Destination = Type.Union([LocalDestination, S3Destination], { title: 'BackupDestination' });
export type DestinationView = Static<typeof Destination>;

export function destinationView(row: DestinationRow): DestinationView {
  const base = { id: row.id, name: row.name, createdAt: row.createdAt, updatedAt: row.updatedAt };
  if (row.kind === 'local') return { ...base, kind: 'local', path: row.path };
  return {
    ...base,
    kind: 's3',
    endpoint: row.endpoint,
    region: row.region,
    bucket: row.bucket,
    prefix: row.prefix ?? '',
    accessKeyId: row.accessKeyId,
    secretAccessKey: row.secretAccessKey ? SECRET_MASK : null,
    forcePathStyle: row.forcePathStyle === 1,
  };
}

export const DestinationTest = Type.Object({
  ok: Type.Boolean(),
  /** Why the probe failed, in Berth's words (never the endpoint's own message). */
  error: Type.Optional(Type.String()),
  latencyMs: Type.Integer(),
});

// ---------------------------------------------------------------- policies

export const Policy = Type.Object(
  {
    id: Type.String(),
    projectId: Type.String(),
    destinationId: Type.String(),
    serviceId: Type.String(),
    cronExpression: Nullable(Type.String()),
    timezone: Type.String(),
    retainCount: Nullable(Type.Integer()),
    retainDays: Nullable(Type.Integer()),
    enabled: Type.Boolean(),
    webhookEnabled: Type.Boolean(),
    createdBy: Type.String(),
    createdAt: Time,
    updatedAt: Time,
    nextRunAt: Nullable(Time),
    lastSuccessAt: Nullable(Time),
    /** Enabled, scheduled, and no success for more than two intervals of its schedule. */
    overdue: Type.Boolean(),
    /** Each new run is restored into a throwaway instance (managed services), recording `verifiedAt` on the run. */
    verifyRestore: Type.Boolean(),
    /** The webhook token, only in the answer that issued it. */
    webhookToken: Type.Optional(Type.String()),
  },
  { title: 'BackupPolicy' },
);
export type PolicyView = Static<typeof Policy>;

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

export function policyView(row: PolicyRow, now = new Date(), webhookToken?: string): PolicyView {
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
    verifyRestore: row.verifyRestore === 1,
    ...(webhookToken ? { webhookToken } : {}),
  };
}

// ---------------------------------------------------------------- runs

export const Run = Type.Object(
  {
    id: Type.String(),
    policyId: Type.String(),
    projectId: Type.String(),
    serviceId: Type.String(),
    destinationId: Type.String(),
    /** queued | running | uploading | verifying | succeeded | failed | cancelled | server_error */
    status: Type.String(),
    /** manual | cron | webhook */
    trigger: Type.String(),
    protected: Type.Boolean(),
    sizeBytes: Nullable(Type.Integer()),
    sha256: Nullable(Type.String()),
    createdAt: Time,
    startedAt: Nullable(Time),
    finishedAt: Nullable(Time),
    error: Nullable(Type.String()),
    /** When a throwaway restore of this run (policy `verifyRestore`) answered and held its data. */
    verifiedAt: Nullable(Time),
    /** Why that restore did not, in Berth's words. */
    verifyError: Nullable(Type.String()),
  },
  { title: 'BackupRun' },
);
export type RunView = Static<typeof Run>;

export function runView(row: RunRow): RunView {
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
    verifiedAt: row.verifiedAt ?? null,
    verifyError: row.verifyError ?? null,
  };
}

/** A run started (or the one already in flight): 201 when started, 200 when it was in flight. */
export const RunStarted = Type.Object({ runId: Type.String() });

// ---------------------------------------------------------------- restores

export const Restore = Type.Object(
  {
    id: Type.String(),
    runId: Type.String(),
    projectId: Type.String(),
    serviceId: Type.String(),
    /** staged | applying | succeeded | failed | cancelled | server_error */
    status: Type.String(),
    createdAt: Time,
    expiresAt: Time,
    appliedAt: Nullable(Time),
    finishedAt: Nullable(Time),
    error: Nullable(Type.String()),
  },
  { title: 'BackupRestore' },
);
export type RestoreView = Static<typeof Restore>;

export function restoreView(row: RestoreRow): RestoreView {
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

export const RestorePrepared = Type.Object({
  restoreId: Type.String(),
  /** One-time token that apply must echo; shown once. */
  confirmationToken: Type.String(),
  expiresAt: Time,
});

// ---------------------------------------------------------------- shared

export const Deleted = Type.Object({ id: Type.String(), deleted: Type.Boolean() });
