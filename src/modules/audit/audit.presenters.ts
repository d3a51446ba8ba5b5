import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../http/schemas.js';

/** The audit log's API shapes. */

export const AuditEventView = Type.Object({
  id: Type.String(),
  at: Type.String(),
  actorId: Nullable(Type.String()),
  action: Type.String({ description: 'what happened, e.g. `token.create`, `member.role_change`' }),
  resourceType: Type.String(),
  resourceId: Nullable(Type.String()),
  details: Type.Object({}, { additionalProperties: true, description: 'names and ids only, never secret values' }),
});
export type AuditEventView = Static<typeof AuditEventView>;

/** GET /api/audit answers a page beside the envelope's `data`: `{ data: [event], nextCursor }`. */
export const AuditPage = Type.Object({
  data: Type.Array(AuditEventView),
  nextCursor: Nullable(Type.String({ description: 'pass back as `cursor` for the next page; null: no more' })),
});
export type AuditPage = Static<typeof AuditPage>;
