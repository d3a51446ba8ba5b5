import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { Id, Obj } from '../../http/schemas.js';
import { gateAccess } from '../../http/stream-access.js';
import { Restore, restoreView } from './backups.presenters.js';
import { backupsRuntime } from './backups.runtime.js';
import * as store from './backups.store.js';
import { streamRecord } from './record-stream.js';
import * as svc from './restores.service.js';

/** Routes of one restore: apply and cancel (admin on the restore's project), view and stream (read). */

const RestoreParams = Obj({ restoreId: Id });
const restore = { kind: 'backup_restore', param: 'restoreId' } as const;

const ApplyBody = Type.Optional(
  Type.Union([
    Obj({
      confirmationToken: Type.Optional(
        Type.Unsafe<unknown>({
          description:
            'The confirmationToken that POST /api/backup-runs/:runId/restore/prepare returned (a string); a missing, non-string, oversize (over 200 characters), wrong, used or expired token is 400 INVALID_CONFIRMATION_TOKEN naming confirmationToken',
        }),
      ),
    }),
    Type.Null(),
  ]),
);

export const restoreRoutes = [
  defineRoute({
    method: 'POST',
    url: '/api/backup-restores/:restoreId/apply',
    summary: 'Apply a staged restore (destructive; needs the exact confirmation token)',
    tag: 'backup_destination:backup_restore:write',
    requires: [{ tag: 'project:admin', on: 'project' }],
    resource: restore,
    // Body `{ confirmationToken }`, checked by the service: a missing body, a missing, non-string,
    // oversize or wrong token are all 400 INVALID_CONFIRMATION_TOKEN (so the schema declares the
    // field without a type the validator would refuse first with VALIDATION_FAILED).
    schema: { params: RestoreParams, body: ApplyBody, response: Restore },
    handler({ actor, resource, body }, ctx) {
      const t = (body as { confirmationToken?: unknown } | undefined)?.confirmationToken;
      const token = typeof t === 'string' && t.length <= 200 ? t : undefined;
      return svc.applyRestore(ctx, actor, resource.record, token);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/backup-restores/:restoreId/cancel',
    summary: 'Cancel a staged or in-flight restore',
    tag: 'backup_destination:backup_restore:write',
    requires: [{ tag: 'project:admin', on: 'project' }],
    resource: restore,
    schema: { params: RestoreParams, response: Restore },
    handler: ({ resource }, ctx) => svc.cancelRestore(ctx, resource.record),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/backup-restores/:restoreId',
    summary: 'Get one restore',
    tag: 'backup_destination:backup_restore:read',
    requires: [{ tag: 'project:read', on: 'project' }],
    resource: restore,
    schema: { params: RestoreParams, response: Restore },
    handler: ({ resource }) => restoreView(resource.record),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/backup-restores/:restoreId/stream',
    summary: 'SSE progress of a restore: snapshot, transitions and progress, complete',
    tag: 'backup_destination:backup_restore:read',
    requires: [{ tag: 'project:read', on: 'project' }],
    resource: restore,
    raw: true,
    produces: 'text/event-stream',
    schema: { params: RestoreParams },
    handler({ resource, reply, req }, ctx) {
      const row = resource.record;
      const load = () => store.findRestore(ctx.db, row.orgId, row.id);
      streamRecord(backupsRuntime(ctx).events, reply, req.id, `restore:${row.id}`, load, restoreView, row, gateAccess(req));
    },
  }),
];
