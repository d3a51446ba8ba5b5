import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { Id, Obj, Str } from '../../http/schemas.js';
import { gateAccess } from '../../http/stream-access.js';
import { RestorePrepared, Run, runView } from './backups.presenters.js';
import { backupsRuntime } from './backups.runtime.js';
import * as store from './backups.store.js';
import { streamRecord } from './record-stream.js';
import { prepareRestore } from './restores.service.js';
import * as svc from './runs.service.js';

/**
 * Routes of backup runs: a project's list (`project:write` on the project), and one run's view and
 * stream (read on the run's project), protect and cancel (write), and restore prepare (admin).
 */

const RunParams = Obj({ runId: Id });
const run = { kind: 'backup_run', param: 'runId' } as const;

export const runRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/projects/:projectId/backup-runs',
    summary: 'List backup runs of a project, newest first',
    tag: 'project:write',
    resource: { kind: 'project', param: 'projectId' },
    schema: {
      params: Obj({ projectId: Id }),
      querystring: Obj({
        policyId: Type.Optional(Id),
        status: Type.Optional(Str({ max: 32 })),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
      }),
      response: Type.Array(Run),
    },
    handler: ({ resource, query }, ctx) => svc.listRuns(ctx, resource, query ?? {}),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/backup-runs/:runId',
    summary: 'Get one backup run',
    tag: 'backup_destination:backup_run:read',
    requires: [{ tag: 'project:read', on: 'project' }],
    resource: run,
    schema: { params: RunParams, response: Run },
    handler: ({ resource }) => runView(resource.record),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/backup-runs/:runId/stream',
    summary: 'SSE progress of a backup run: snapshot, transitions and progress, complete',
    tag: 'backup_destination:backup_run:read',
    requires: [{ tag: 'project:read', on: 'project' }],
    resource: run,
    raw: true,
    produces: 'text/event-stream',
    schema: { params: RunParams },
    handler({ resource, reply, req }, ctx) {
      const row = resource.record;
      const load = () => store.findRun(ctx.db, row.orgId, row.id);
      streamRecord(backupsRuntime(ctx).events, reply, req.id, `run:${row.id}`, load, runView, row, gateAccess(req));
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/backup-runs/:runId/protect',
    summary: 'Protect a run from pruning, or release it: { protected: true|false }',
    tag: 'backup_destination:backup_run:write',
    requires: [{ tag: 'project:write', on: 'project' }],
    resource: run,
    schema: { params: RunParams, body: Obj({ protected: Type.Boolean() }), response: Run },
    handler: ({ resource, body }, ctx) => svc.protectRun(ctx, resource.record, body.protected),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/backup-runs/:runId/cancel',
    summary: 'Cancel a run in flight',
    tag: 'backup_destination:backup_run:write',
    requires: [{ tag: 'project:write', on: 'project' }],
    resource: run,
    schema: { params: RunParams, response: Run },
    handler: ({ resource }, ctx) => svc.cancelRun(ctx, resource.record),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/backup-runs/:runId/restore/prepare',
    summary: 'Stage a restore: verifies the artifact, answers a one-time confirmation token',
    tag: 'backup_destination:backup_run:write',
    requires: [{ tag: 'project:admin', on: 'project' }],
    resource: run,
    status: 201,
    // Body `{}` (or none): nothing is read from it.
    schema: { params: RunParams, response: RestorePrepared },
    handler: ({ actor, resource }, ctx) => prepareRestore(ctx, actor, resource.record),
  }),
];
