import { Type } from '@sinclair/typebox';
import { defineRoute, type ModuleDef } from '../../http/route.js';
import { Obj, Str } from '../../http/schemas.js';
import { AuditPage } from './audit.presenters.js';
import { auditPage } from './audit.service.js';

/**
 * GET /api/audit?limit=&cursor=: the active org's audit log, newest first. Answers
 * `{ data: [event], nextCursor }`; pass `nextCursor` back as `cursor` for the next page (null: done).
 * Needs `audit:read`: owners and admins, or a restricted member with a grant on `audit` `*`.
 */
export const auditModule: ModuleDef = {
  name: 'audit',
  routes: [
    defineRoute({
      method: 'GET',
      url: '/api/audit',
      summary: "The active org's audit log, newest first, with cursor pagination",
      tag: 'audit:read',
      // The page's cursor sits beside `data`: the handler answers the whole body.
      envelope: false,
      schema: { querystring: Obj({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })), cursor: Type.Optional(Str({ min: 1, max: 64 })) }), response: AuditPage },
      handler: ({ actor, query }, ctx) => auditPage(ctx, actor, query),
    }),
  ],
};
