import { safeEqual, sha256Hex } from '../../lib/crypto.js';
import type { BackupsCtx } from './backups.audit.js';
import * as store from './backups.store.js';
import type { PolicyRow } from './backups.store.js';
import { projectRunsHere } from './project-link.js';

/**
 * The inbound backup webhook's credential: a per-policy token (`Bearer berth_bwh_…`). Every failure
 * (malformed, unknown, disabled, a project that moved to the cloud) is the same opaque 404.
 */

type Ctx = BackupsCtx;

/** The one answer of every webhook failure: same bytes, no request id. */
export const WEBHOOK_NOT_FOUND = { error: { code: 'NOT_FOUND', message: 'not found' } };

const TOKEN_RE = /^Bearer (berth_bwh_[A-Za-z0-9_-]{20,100})$/;

/** Resolves a webhook credential to its policy, or null for every kind of failure. */
export async function webhookPolicy(ctx: Ctx, authorization: string | undefined): Promise<PolicyRow | null> {
  const m = TOKEN_RE.exec(authorization ?? '');
  // Hash whatever came, so that malformed and wrong tokens cost the same work.
  const presented = sha256Hex(m?.[1] ?? `invalid:${authorization ?? ''}`);
  const row = await store.findPolicyByWebhookHash(ctx.db, presented);
  if (!m || !row || !row.webhookTokenHash) return null;
  if (!safeEqual(row.webhookTokenHash, presented)) return null;
  if (row.webhookEnabled !== 1 || row.enabled !== 1) return null;
  // A policy of a project that moved to the cloud does not run here (see duePolicies).
  if (!(await projectRunsHere(ctx.db, row.orgId, row.projectId))) return null;
  return row;
}
