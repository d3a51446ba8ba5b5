import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';
import type { AuditPage } from './audit.presenters.js';
import { findAuditEvent, listAuditEvents } from './audit.store.js';

/** One page of the active org's audit log, newest first; `cursor` is the last id of the previous page. */
export async function auditPage({ db }: Pick<AppContext, 'db'>, actor: Actor, query: { limit?: number; cursor?: string }): Promise<AuditPage> {
  const limit = query.limit ?? 50;
  let after: { at: string; id: string } | undefined;
  if (query.cursor) {
    after = await findAuditEvent(db, actor.orgId, query.cursor);
    if (!after) throw new AppError('VALIDATION_FAILED', 'cursor does not name an event of this organization', { field: 'cursor' });
  }
  const rows = await listAuditEvents(db, actor.orgId, limit + 1, after);
  const page = rows.slice(0, limit);
  return { data: page, nextCursor: rows.length > limit ? page[page.length - 1]!.id : null };
}
