/** Transfers run in the background with their progress (docs/cloud.md "Transfers in the background"). */
import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { Id, Obj } from '../../http/schemas.js';
import { openSse } from '../../http/sse.js';
import { endWithAccess, gateAccess } from '../../http/stream-access.js';
import { TransferRecordSchema } from './cloud.presenters.js';
import { findTransfer, startTransfer } from './transfers.service.js';

const TransferParams = Obj({ id: Id, transferId: Id });
const StartBody = Obj({ to: Type.Union([Type.Literal('cloud'), Type.Literal('self-hosted')]), includeData: Type.Optional(Type.Boolean()) });

export const transferRoutes = [
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/transfers',
    summary: 'Start a transfer to the cloud or back in the background (202 with its record; follow it at .../transfers/:transferId/events). Self-hosted only.',
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    selfHostedOnly: true,
    status: 202,
    schema: { params: Obj({ id: Id }), body: StartBody, response: TransferRecordSchema },
    handler: async ({ actor, resource, req, reply, body }, ctx) => {
      const t = await startTransfer(ctx, actor, resource.record, body.to, body.includeData === true, req.id);
      reply.header('location', `/api/projects/${encodeURIComponent(t.projectId)}/transfers/${t.id}`);
      return t;
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/transfers/:transferId',
    summary: "A background transfer's record: status, progress (service, phase, bytes), and its result or error. Self-hosted only.",
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    selfHostedOnly: true,
    schema: { params: TransferParams, response: TransferRecordSchema },
    handler: ({ resource, params }, ctx) => findTransfer(ctx, resource.record, params.transferId),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/transfers/:transferId/events',
    summary: "Follow a background transfer (SSE: `snapshot`, `progress` { phase, service, bytes, totalBytes? }, then `complete` with its record). Self-hosted only.",
    tag: 'project:admin',
    resource: { kind: 'project', param: 'id' },
    selfHostedOnly: true,
    raw: true,
    produces: 'text/event-stream',
    schema: { params: TransferParams },
    handler: async ({ resource, params, req, reply }, ctx) => {
      const first = findTransfer(ctx, resource.record, params.transferId);
      const sse = openSse(reply, { requestId: req.id });
      const access = gateAccess(req);
      if (access) endWithAccess(sse, access);
      let seq = 0;
      sse.send('snapshot', first, ++seq);
      const stop = ctx.state.transfers.follow(first.id, (event, record) => {
        if (event === 'progress') sse.send('progress', record.progress, ++seq);
        else {
          sse.send('complete', record, ++seq);
          sse.close();
        }
      });
      sse.onClose(stop);
    },
  }),
];
