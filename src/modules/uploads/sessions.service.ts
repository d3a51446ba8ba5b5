/** Folder-upload sessions: opening one (quotas, the one-time upload token) and resolving one for routes. */
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import type { ResolvedResource } from '../../http/route.js';
import { sha256Hex } from '../../lib/crypto.js';
import { AppError, conflict, notFound } from '../../lib/errors.js';
import { clockIso } from '../../lib/clock.js';
import { newId, newSecretToken } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { projectQueries, type ProjectRow } from '../projects/index.js';
import { MAX_UPLOAD_BYTES, SESSION_TTL_MS, UPLOAD_TOKEN_HEADER } from './upload-layout.js';
import { orgFull, othersInFlight, retryAfter } from './upload-quota.js';
import * as store from './uploads.store.js';
import type { UploadSessionRow } from './uploads.store.js';

declare module '../../http/route.js' {
  interface ResourceKinds {
    upload_session: UploadSessionRow;
  }
}

export interface SessionAnswer {
  sessionId: string;
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  expiresAt: string;
  maxBytes: number;
}

/**
 * Opens a session. The caller was authorized: project:write on `input.projectId` (the route resolves
 * it: `opts.project`), or on the org when it names none. A project that lives on the cloud is refused
 * (409) unless `allowCloudProject` (the transfer back from the cloud).
 */
export async function createSession(
  ctx: AppContext,
  actor: Actor,
  input: { name?: string; projectId?: string; sizeBytes?: number },
  opts: { project?: ProjectRow; allowCloudProject?: boolean } = {},
): Promise<SessionAnswer> {
  if (input.projectId) {
    const row = opts.project ?? (await projectQueries.findProject(ctx.db, actor.orgId, input.projectId));
    if (!row) throw notFound('project');
    // (A transfer back from the cloud receives the source into the record before it flips it.)
    if (row.location === 'cloud' && !opts.allowCloudProject) {
      throw conflict('this project lives on the cloud: open the upload session on the cloud, or move the project back first', 'projectId');
    }
  }
  if (input.sizeBytes !== undefined && input.sizeBytes > MAX_UPLOAD_BYTES) {
    throw new AppError('PAYLOAD_TOO_LARGE', `uploads are limited to ${MAX_UPLOAD_BYTES} bytes (300 MB); this one is ${input.sizeBytes}`, { field: 'sizeBytes' });
  }
  const id = newId('upl');
  const token = newSecretToken('berth_upl');
  const now = clockIso(ctx.clock);
  const expiresAt = clockIso(ctx.clock, SESSION_TTL_MS);
  const limits = ctx.config.hardening.uploads;
  await transaction(ctx.db, async (tx) => {
    // Quotas (contract section 17): open sessions per user, stored unconsumed bytes per org. On
    // PostgreSQL the user's row is locked so that concurrent opens are counted one after another
    // (SQLite has a single writer).
    if (ctx.dialect === 'postgres') await store.lockUser(tx, actor.userId);
    const open = await store.openSessionsOfUser(tx, actor.userId, now);
    if (open.n >= limits.maxOpenSessionsPerUser) {
      throw new AppError('RATE_LIMITED', `you have ${open.n} open upload sessions (at most ${limits.maxOpenSessionsPerUser}); use them or let them expire first`, {
        retryAfterSeconds: retryAfter(open.soonest, ctx.clock.now()),
      });
    }
    const stored = await store.storedBytesOfOrg(tx, actor.orgId, now);
    const elsewhere = await othersInFlight(ctx, tx, actor.orgId);
    if (stored.bytes + ctx.state.uploads.inFlight.of(actor.orgId) + elsewhere >= limits.maxOrgBytes) throw orgFull(limits.maxOrgBytes, stored.soonest, ctx.clock.now());
    await store.insertSession(tx, {
      id,
      orgId: actor.orgId,
      createdBy: actor.userId,
      projectId: input.projectId ?? null,
      name: input.name?.trim() || null,
      sizeHint: input.sizeBytes ?? null,
      tokenHash: sha256Hex(token),
      status: 'open',
      sizeBytes: null,
      sha256: null,
      files: null,
      scan: null,
      createdAt: now,
      expiresAt,
      uploadedAt: null,
      consumedAt: null,
    });
    await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'upload.session', resourceType: 'upload_session', resourceId: id, details: { projectId: input.projectId ?? null } });
  });
  return {
    sessionId: id,
    // The relay is self-hosted only; a cloud instance's target is its own upload route (cloud area).
    url: ctx.config.mode === 'cloud' ? `${ctx.publicUrl()}/api/uploads/${id}` : `${ctx.publicUrl()}/api/projects/folder/upload/${id}`,
    method: 'POST',
    headers: { 'content-type': 'application/gzip', [UPLOAD_TOKEN_HEADER]: token },
    expiresAt,
    maxBytes: MAX_UPLOAD_BYTES,
  };
}

/** Resolver of kind `upload_session`: a session of the org; a grant on its project covers it. */
export async function resolveSession(ctx: AppContext, orgId: string, id: string): Promise<ResolvedResource<'upload_session'> | null> {
  const row = await store.findSession(ctx.db, orgId, id);
  if (!row) return null;
  return { kind: 'upload_session', id: row.id, orgId: row.orgId, grantKeys: row.projectId ? [{ type: 'project', id: row.projectId }] : [], record: row };
}
