import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';
import { Answer, defineRoute, type ModuleDef, type ResolvedResource } from '../../http/route.js';
import { Id, Nullable, Obj, Str } from '../../http/schemas.js';
import { openSse } from '../../http/sse.js';
import { endWithAccess, gateAccess, type StreamAccess } from '../../http/stream-access.js';
import { registerCatalog } from '../permissions/catalog.js';
import { registerProjectDependent } from '../projects/dependents.js';
import * as store from './backups.store.js';
import type { DestinationRow, PolicyRow, RestoreRow, RunRow } from './backups.store.js';
import * as svc from './backups.service.js';
import { subscribe } from './events.js';
import { isTerminal } from './retention.js';
import { executeRestore, executeRun, recoverStale, sweepVolumes } from './runner.js';

const limiters = new WeakMap<AppContext, svc.RateLimiter>();
function limiter(ctx: AppContext): svc.RateLimiter {
  let l = limiters.get(ctx);
  if (!l) limiters.set(ctx, (l = new svc.RateLimiter(ctx.config.webhookRateLimit)));
  return l;
}

const rec = <T>(r: ResolvedResource | undefined) => r!.record as T;

const DestinationCreate = Obj({
  name: Str({ min: 1, max: 100 }),
  kind: Type.Union([Type.Literal('local'), Type.Literal('s3')]),
  path: Type.Optional(Str({ min: 1, max: 1024 })),
  endpoint: Type.Optional(Nullable(Str({ max: 512 }))),
  region: Type.Optional(Str({ max: 64 })),
  bucket: Type.Optional(Str({ min: 3, max: 63 })),
  prefix: Type.Optional(Str({ max: 512 })),
  accessKeyId: Type.Optional(Str({ min: 1, max: 256 })),
  secretAccessKey: Type.Optional(Str({ min: 1, max: 512 })),
  forcePathStyle: Type.Optional(Type.Boolean()),
});
const DestinationPatch = Obj({
  name: Type.Optional(Str({ min: 1, max: 100 })),
  kind: Type.Optional(Type.Union([Type.Literal('local'), Type.Literal('s3')])),
  path: Type.Optional(Str({ min: 1, max: 1024 })),
  endpoint: Type.Optional(Nullable(Str({ max: 512 }))),
  region: Type.Optional(Str({ max: 64 })),
  bucket: Type.Optional(Str({ min: 3, max: 63 })),
  prefix: Type.Optional(Str({ max: 512 })),
  accessKeyId: Type.Optional(Str({ min: 1, max: 256 })),
  secretAccessKey: Type.Optional(Str({ min: 1, max: 512 })),
  forcePathStyle: Type.Optional(Type.Boolean()),
});

const Retain = {
  retainCount: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 10000 }))),
  retainDays: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 36500 }))),
};
const PolicyCreate = Obj({
  destinationId: Id,
  serviceId: Type.Optional(Id),
  cronExpression: Type.Optional(Nullable(Str({ min: 1, max: 200 }))),
  timezone: Type.Optional(Str({ min: 1, max: 64 })),
  ...Retain,
  enabled: Type.Optional(Type.Boolean()),
  enableWebhook: Type.Optional(Type.Boolean()),
});
/** The allow-list of policy updates: projectId, serviceId and createdBy are not in it (dropped). */
const PolicyPatch = Obj({
  destinationId: Type.Optional(Id),
  cronExpression: Type.Optional(Nullable(Str({ min: 1, max: 200 }))),
  timezone: Type.Optional(Str({ min: 1, max: 64 })),
  ...Retain,
  enabled: Type.Optional(Type.Boolean()),
  enableWebhook: Type.Optional(Type.Boolean()),
  rotateWebhookToken: Type.Optional(Type.Boolean()),
});

const ProjectParams = Obj({ projectId: Id });
const PolicyParams = Obj({ policyId: Id });
const RunParams = Obj({ runId: Id });
const RestoreParams = Obj({ restoreId: Id });

const STREAM_POLL_MS = 1000;

/**
 * SSE of one run or restore: `snapshot` first, then live `transition` and `progress`, then `complete`
 * and close. Events come from the in-process bus; the row is also polled, so a run executing on
 * another instance is followed as well.
 */
function streamRecord<T extends { status: string }>(
  reply: import('fastify').FastifyReply,
  reqId: string,
  key: string,
  load: () => Promise<T | undefined>,
  view: (row: T) => unknown,
  initial: T,
  access: StreamAccess | null,
): void {
  const sse = openSse(reply, { requestId: reqId });
  // The stream ends when the access that opened it ends (docs/security.md).
  if (access) endWithAccess(sse, access);
  let seq = 0;
  let last = initial.status;
  let done = false;
  const finish = async () => {
    if (done) return;
    done = true;
    const row = (await load().catch(() => undefined)) ?? initial;
    sse.send('complete', view(row), ++seq);
    sse.close();
  };
  sse.send('snapshot', view(initial), ++seq);
  if (isTerminal(initial.status)) {
    void finish();
    return;
  }
  const unsub = subscribe(key, (ev) => {
    if (done) return;
    if (ev.type === 'transition') {
      if (ev.data.to === last) return;
      last = ev.data.to;
      sse.send('transition', ev.data, ++seq);
      if (isTerminal(ev.data.to)) void finish();
    } else {
      sse.send('progress', ev.data, ++seq);
    }
  });
  const poll = setInterval(() => {
    void (async () => {
      if (done) return;
      const row = await load().catch(() => undefined);
      if (done) return;
      if (!row) {
        // Pruned or deleted while watched.
        done = true;
        sse.close();
        return;
      }
      if (row.status !== last) {
        sse.send('transition', { from: last, to: row.status, at: new Date().toISOString() }, ++seq);
        last = row.status;
        if (isTerminal(row.status)) await finish();
      }
    })();
  }, STREAM_POLL_MS);
  poll.unref();
  sse.onClose(() => {
    done = true;
    unsub();
    clearInterval(poll);
  });
}

export const backupsModule: ModuleDef = {
  name: 'backups',
  resolvers: {
    async backup_destination(ctx, orgId, id) {
      const row = await store.findDestination(ctx.db, orgId, id);
      return row ? svc.destinationRef(row) : null;
    },
    async backup_policy(ctx, orgId, id) {
      const row = await store.findPolicy(ctx.db, orgId, id);
      return row ? svc.policyRef(row) : null;
    },
    async backup_run(ctx, orgId, id) {
      const row = await store.findRun(ctx.db, orgId, id);
      return row ? svc.runRef(row) : null;
    },
    async backup_restore(ctx, orgId, id) {
      const row = await store.findRestore(ctx.db, orgId, id);
      return row ? svc.restoreRef(row) : null;
    },
  },

  init(ctx) {
    ctx.jobs.register<{ id: string; orgId: string }>(svc.RUN_JOB, (p, _job, signal) => executeRun(ctx, p.id, p.orgId, signal), { maxAttempts: 1 });
    ctx.jobs.register<{ id: string; orgId: string }>(svc.RESTORE_JOB, (p, _job, signal) => executeRestore(ctx, p.id, p.orgId, signal), { maxAttempts: 1 });
    ctx.scheduler.add({ name: 'backups.cron', everyMs: 5000, run: async () => void (await svc.runDueSchedules(ctx)) });
    // Runs whose heartbeat stopped (their instance died) become server_error.
    ctx.scheduler.add({ name: 'backups.sweep', everyMs: 10000, run: async () => void (await recoverStale(ctx, 5000, false)) });
    // The `backup_destination` resources of grants (catalog and RESOURCE_NOT_IN_ORG checks).
    registerCatalog('backup_destination', {
      async list(c, orgId) {
        const rows = await store.listDestinations(c.db, orgId);
        return rows.map((r) => ({ id: r.id, label: r.name, meta: { kind: r.kind } }));
      },
      async has(c, orgId, id) {
        return !!(await store.findDestination(c.db, orgId, id));
      },
    });
    registerProjectDependent({
      name: 'backupPolicies',
      async preview(db, orgId, projectId) {
        const rows = await store.listPolicies(db, orgId, projectId);
        return { count: rows.length, names: rows.map((r) => r.id) };
      },
      async remove(tx, orgId, projectId) {
        await tx.deleteFrom('backupRestores').where('orgId', '=', orgId).where('projectId', '=', projectId).execute();
        await tx.deleteFrom('backupRuns').where('orgId', '=', orgId).where('projectId', '=', projectId).execute();
        await tx.deleteFrom('backupPolicies').where('orgId', '=', orgId).where('projectId', '=', projectId).execute();
      },
    });
    registerProjectDependent({
      name: 'backupRuns',
      async preview(db, orgId, projectId) {
        const rows = await store.listRuns(db, orgId, projectId, { limit: 1000 });
        return { count: rows.length, names: rows.map((r) => r.id) };
      },
      async remove() {
        /* removed with the policies above */
      },
    });
  },

  async start(ctx) {
    // SQLite: the data-dir lock makes this the only instance, so whatever is in flight is dead.
    // PostgreSQL: only rows whose heartbeat stopped; the sweep ticker catches the rest.
    const n = await recoverStale(ctx, ctx.dialect === 'sqlite' ? null : 5000, true);
    if (n) ctx.log.warn({ recovered: n }, 'backup runs and restores interrupted by a stop were marked server_error');
    if (ctx.dialect === 'sqlite') await sweepVolumes(ctx).catch((e) => ctx.log.warn({ err: (e as Error).message }, 'volume sweep failed'));
    if (ctx.dialect === 'postgres') setTimeout(() => void recoverStale(ctx, 5000, true).catch(() => {}), 6000).unref();
  },

  routes: [
    // ------------------------------------------------------------ destinations
    defineRoute({
      method: 'GET',
      url: '/api/backup-destinations',
      summary: 'List backup destinations (secrets masked)',
      tag: 'backup_destination:list',
      handler: ({ actor }, ctx) => svc.listDestinations(ctx, actor),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/backup-destinations',
      summary: 'Create a backup destination (a local folder or an S3-compatible bucket)',
      tag: 'backup_destination:write',
      status: 201,
      schema: { body: DestinationCreate },
      handler: ({ actor, body }, ctx) => svc.createDestination(ctx, actor, body),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/backup-destinations/:id',
      summary: 'Get one backup destination (secrets masked)',
      tag: 'backup_destination:read',
      resource: { kind: 'backup_destination', param: 'id' },
      schema: { params: Obj({ id: Id }) },
      handler: ({ resource }) => svc.destinationView(rec<DestinationRow>(resource)),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/backup-destinations/:id',
      summary: 'Update a backup destination',
      tag: 'backup_destination:write',
      resource: { kind: 'backup_destination', param: 'id' },
      schema: { params: Obj({ id: Id }), body: DestinationPatch },
      handler: ({ actor, resource, body }, ctx) => svc.updateDestination(ctx, actor, rec<DestinationRow>(resource), body),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/backup-destinations/:id',
      summary: 'Delete a backup destination no policy or kept run uses',
      tag: 'backup_destination:admin',
      resource: { kind: 'backup_destination', param: 'id' },
      schema: { params: Obj({ id: Id }) },
      handler: ({ actor, resource }, ctx) => svc.deleteDestination(ctx, actor, rec<DestinationRow>(resource)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/backup-destinations/:id/test',
      summary: 'Write, read back and delete a probe object',
      tag: 'backup_destination:write',
      resource: { kind: 'backup_destination', param: 'id' },
      schema: { params: Obj({ id: Id }) },
      handler: ({ actor, resource }, ctx) => svc.testDestination(ctx, actor, rec<DestinationRow>(resource)),
    }),

    // ------------------------------------------------------------ policies
    defineRoute({
      method: 'GET',
      url: '/api/projects/:projectId/backup-policies',
      summary: 'List backup policies of a project',
      tag: 'project:write',
      resource: { kind: 'project', param: 'projectId' },
      schema: { params: ProjectParams },
      handler: ({ actor, resource }, ctx) => svc.listPolicies(ctx, actor, resource as { id: string; orgId: string }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/projects/:projectId/backup-policies',
      summary: 'Create a backup policy',
      tag: 'project:write',
      resource: { kind: 'project', param: 'projectId' },
      status: 201,
      schema: { params: ProjectParams, body: PolicyCreate },
      handler: ({ actor, resource, body }, ctx) => svc.createPolicy(ctx, actor, resource as { id: string; orgId: string }, body),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/backup-policies/:policyId',
      summary: 'Update a backup policy (allow-listed fields)',
      tag: 'backup_destination:backup_policy:write',
      resource: { kind: 'backup_policy', param: 'policyId' },
      schema: { params: PolicyParams, body: PolicyPatch },
      handler: ({ actor, resource, body }, ctx) => svc.updatePolicy(ctx, actor, rec<PolicyRow>(resource), body ?? {}),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/backup-policies/:policyId',
      summary: 'Delete a backup policy (needs admin on the project)',
      tag: 'backup_destination:backup_policy:write',
      resource: { kind: 'backup_policy', param: 'policyId' },
      schema: { params: PolicyParams },
      handler: ({ actor, resource }, ctx) => svc.deletePolicy(ctx, actor, rec<PolicyRow>(resource)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/backup-policies/:policyId/run',
      summary: 'Trigger a backup now (answers the run in flight if there is one)',
      tag: 'backup_destination:backup_policy:write',
      resource: { kind: 'backup_policy', param: 'policyId' },
      schema: { params: PolicyParams },
      async handler({ actor, resource }, ctx) {
        const out = await svc.manualRun(ctx, actor, rec<PolicyRow>(resource));
        return new Answer({ data: { runId: out.runId } }, out.created ? 201 : 200);
      },
    }),

    // ------------------------------------------------------------ runs
    defineRoute({
      method: 'GET',
      url: '/api/projects/:projectId/backup-runs',
      summary: 'List backup runs of a project, newest first',
      tag: 'project:write',
      resource: { kind: 'project', param: 'projectId' },
      schema: {
        params: ProjectParams,
        querystring: Obj({
          policyId: Type.Optional(Id),
          status: Type.Optional(Str({ max: 32 })),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
        }),
      },
      handler: ({ actor, resource, query }, ctx) => svc.listRuns(ctx, actor, resource as { id: string; orgId: string }, query ?? {}),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/backup-runs/:runId',
      summary: 'Get one backup run',
      tag: 'backup_destination:backup_run:read',
      resource: { kind: 'backup_run', param: 'runId' },
      schema: { params: RunParams },
      handler: ({ actor, resource }, ctx) => svc.getRun(ctx, actor, rec<RunRow>(resource)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/backup-runs/:runId/stream',
      summary: 'SSE progress of a backup run',
      tag: 'backup_destination:backup_run:read',
      resource: { kind: 'backup_run', param: 'runId' },
      raw: true,
      schema: { params: RunParams },
      handler({ actor, resource, reply, req }, ctx) {
        const row = rec<RunRow>(resource);
        svc.getRun(ctx, actor, row);
        streamRecord(reply, req.id, `run:${row.id}`, () => store.findRun(ctx.db, row.orgId, row.id), svc.runView, row, gateAccess(req));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/backup-runs/:runId/protect',
      summary: 'Protect a run from pruning, or release it: { protected: true|false }',
      tag: 'backup_destination:backup_run:write',
      resource: { kind: 'backup_run', param: 'runId' },
      schema: { params: RunParams, body: Obj({ protected: Type.Boolean() }) },
      handler: ({ actor, resource, body }, ctx) => svc.protectRun(ctx, actor, rec<RunRow>(resource), body.protected),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/backup-runs/:runId/cancel',
      summary: 'Cancel a run in flight',
      tag: 'backup_destination:backup_run:write',
      resource: { kind: 'backup_run', param: 'runId' },
      schema: { params: RunParams },
      handler: ({ actor, resource }, ctx) => svc.cancelRun(ctx, actor, rec<RunRow>(resource)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/backup-runs/:runId/restore/prepare',
      summary: 'Stage a restore: verifies the artifact, answers a one-time confirmation token',
      tag: 'backup_destination:backup_run:write',
      resource: { kind: 'backup_run', param: 'runId' },
      status: 201,
      // Body `{}` (or none): nothing is read from it.
      schema: { params: RunParams },
      async handler({ actor, resource }, ctx) {
        const out = await svc.prepareRestore(ctx, actor, rec<RunRow>(resource));
        return { restoreId: out.restoreId, confirmationToken: out.confirmationToken, expiresAt: out.expiresAt };
      },
    }),

    // ------------------------------------------------------------ restores
    defineRoute({
      method: 'POST',
      url: '/api/backup-restores/:restoreId/apply',
      summary: 'Apply a staged restore (destructive; needs the exact confirmation token)',
      tag: 'backup_destination:backup_restore:write',
      resource: { kind: 'backup_restore', param: 'restoreId' },
      // Body `{ confirmationToken }`, checked by the service: a missing body, a missing, non-string,
      // oversize or wrong token are all 400 INVALID_CONFIRMATION_TOKEN.
      schema: { params: RestoreParams },
      handler({ actor, resource, body }, ctx) {
        const t = (body as { confirmationToken?: unknown } | undefined)?.confirmationToken;
        const token = typeof t === 'string' && t.length <= 200 ? t : undefined;
        return svc.applyRestore(ctx, actor, rec<RestoreRow>(resource), token);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/backup-restores/:restoreId/cancel',
      summary: 'Cancel a staged or in-flight restore',
      tag: 'backup_destination:backup_restore:write',
      resource: { kind: 'backup_restore', param: 'restoreId' },
      schema: { params: RestoreParams },
      handler: ({ actor, resource }, ctx) => svc.cancelRestore(ctx, actor, rec<RestoreRow>(resource)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/backup-restores/:restoreId',
      summary: 'Get one restore',
      tag: 'backup_destination:backup_restore:read',
      resource: { kind: 'backup_restore', param: 'restoreId' },
      schema: { params: RestoreParams },
      handler: ({ actor, resource }, ctx) => svc.getRestore(ctx, actor, rec<RestoreRow>(resource)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/backup-restores/:restoreId/stream',
      summary: 'SSE progress of a restore',
      tag: 'backup_destination:backup_restore:read',
      resource: { kind: 'backup_restore', param: 'restoreId' },
      raw: true,
      schema: { params: RestoreParams },
      handler({ actor, resource, reply, req }, ctx) {
        const row = rec<RestoreRow>(resource);
        svc.getRestore(ctx, actor, row);
        streamRecord(reply, req.id, `restore:${row.id}`, () => store.findRestore(ctx.db, row.orgId, row.id), svc.restoreView, row, gateAccess(req));
      },
    }),

    // ------------------------------------------------------------ webhook
    defineRoute({
      method: 'POST',
      url: '/api/webhooks/backup',
      summary: 'Trigger a backup with the per-policy webhook token (Authorization: Bearer <token>)',
      access: 'public',
      bodyLimit: 64 * 1024,
      async handler({ req }, ctx) {
        const wait = limiter(ctx).hit(req.ip);
        if (wait > 0) throw new AppError('RATE_LIMITED', 'too many webhook requests from this address', { retryAfterSeconds: wait });
        const policy = await svc.webhookPolicy(ctx, req.headers.authorization).catch(() => null);
        if (!policy) return new Answer(svc.WEBHOOK_NOT_FOUND, 404);
        const out = await svc.triggerRun(ctx, policy, 'webhook');
        return new Answer({ data: { runId: out.runId } }, out.created ? 201 : 200);
      },
    }),
  ],
};
