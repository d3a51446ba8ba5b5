import { Type } from '@sinclair/typebox';
import { AppError } from '../../lib/errors.js';
import { Answer, defineRoute, type ModuleDef } from '../../http/route.js';
import { Obj, Str } from '../../http/schemas.js';
import { findAuditEvent, listAuditEvents } from './audit.store.js';

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
      schema: { querystring: Obj({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })), cursor: Type.Optional(Str({ min: 1, max: 64 })) }) },
      async handler({ actor, query }, ctx) {
        const limit = query.limit ?? 50;
        let after: { at: string; id: string } | undefined;
        if (query.cursor) {
          after = await findAuditEvent(ctx.db, actor.orgId, query.cursor);
          if (!after) throw new AppError('VALIDATION_FAILED', 'cursor does not name an event of this organization', { field: 'cursor' });
        }
        const rows = await listAuditEvents(ctx.db, actor.orgId, limit + 1, after);
        const page = rows.slice(0, limit);
        return new Answer({ data: page, nextCursor: rows.length > limit ? page[page.length - 1]!.id : null });
      },
    }),
  ],
};
