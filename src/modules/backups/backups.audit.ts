import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { insertAuditEvent } from '../audit/index.js';

/** What the backups services take from the app context. */
export type BackupsCtx = Pick<AppContext, 'db' | 'keyring' | 'jobs' | 'config' | 'log' | 'instanceId' | 'dialect' | 'ports' | 'state' | 'clock'>;

/** An audit event of the backups area (ids and names only, never a secret); a failure is logged. */
export async function audit(ctx: BackupsCtx, actor: Actor | null, orgId: string, action: string, resourceType: string, resourceId: string, details: Record<string, unknown> = {}): Promise<void> {
  await insertAuditEvent(ctx.db, { orgId, actorId: actor?.userId ?? null, action, resourceType, resourceId, details }).catch((e) =>
    ctx.log.warn({ err: (e as Error).message, action }, 'audit event not recorded'),
  );
}
