import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError, conflict } from '../../lib/errors.js';
import { safeEqual, sha256Hex } from '../../lib/crypto.js';
import { isoPlus, newId, newSecretToken, nowIso } from '../../lib/ids.js';
import type { StreamTokenInfo, StreamTokenKind, StreamTokenPort } from '../../ports.js';
import type { ProjectRow } from '../projects/index.js';
import * as store from './deployments.store.js';
import type { DeploymentRow } from './deployments.store.js';

/**
 * Short-lived read-only stream tokens: a build token opens one deployment's build logs
 * (`berth_dpl_...`, from build/access or deployment-session), a server-log token one project's
 * request-log stream (`berth_slt_...`). Each remembers who minted it and with which credential, so the
 * route gate (`access: 'stream-token'`) re-checks the minter's access for as long as a stream is open.
 */

/** Lifetime of a deployment-session / build-access token (read-only, one deployment). */
export const BUILD_TOKEN_TTL_MS = 15 * 60 * 1000;
/** Lifetime of a server-log stream token (contract section 5: 60 s). */
export const SERVER_LOG_TOKEN_TTL_MS = 60 * 1000;

export interface IssuedToken {
  token: string;
  expiresAt: string;
}

async function issueToken(ctx: AppContext, actor: Actor, kind: StreamTokenKind, projectId: string, deploymentId: string | null, ttlMs: number, prefix: string): Promise<IssuedToken> {
  const token = newSecretToken(prefix, 24);
  const expiresAt = isoPlus(ttlMs);
  await store.pruneTokens(ctx.db, nowIso());
  await store.insertToken(ctx.db, { id: newId('dtk'), tokenHash: sha256Hex(token), orgId: actor.orgId, projectId, deploymentId, kind, createdBy: actor.userId, credentialId: actor.tokenId ?? actor.sessionId ?? null, expiresAt, createdAt: nowIso() });
  return { token, expiresAt };
}

/** `POST /api/deployments/build/access { deploymentId }`: a read-only token for one deployment's build logs. */
export async function issueBuildToken(ctx: AppContext, actor: Actor, d: DeploymentRow): Promise<IssuedToken> {
  return issueToken(ctx, actor, 'build', d.projectId, d.id, BUILD_TOKEN_TTL_MS, 'berth_dpl');
}

/** `POST /api/projects/:id/deployment-session`: a read-only token for the project's latest deployment. */
export async function deploymentSession(ctx: AppContext, actor: Actor, project: ProjectRow): Promise<IssuedToken & { deploymentId: string }> {
  const d = await store.latestDeployment(ctx.db, project.orgId, project.id);
  if (!d) throw conflict('the project has no deployment yet: create one with POST /api/deployments');
  const t = await issueBuildToken(ctx, actor, d);
  return { ...t, deploymentId: d.id };
}

/** `GET /api/projects/:id/server-logs/stream-token`: 60 seconds on the project's request-log stream. */
export async function serverLogStreamToken(ctx: AppContext, actor: Actor, project: ProjectRow): Promise<IssuedToken> {
  return issueToken(ctx, actor, 'server_logs', project.id, null, SERVER_LOG_TOKEN_TTL_MS, 'berth_slt');
}

/** Checks a stream token: the right kind, for this record, not expired. Wrong or expired is 401. */
export async function verifyStreamToken(ctx: AppContext, token: string, kind: StreamTokenKind, recordId: string): Promise<StreamTokenInfo> {
  if (typeof token !== 'string' || token.length > 200) throw new AppError('UNAUTHENTICATED', 'invalid or expired stream token');
  const row = await store.findTokenByHash(ctx.db, sha256Hex(token));
  const ok = row && row.kind === kind && row.expiresAt > nowIso() && safeEqual(row.tokenHash, sha256Hex(token)) && (kind === 'build' ? row.deploymentId === recordId : row.projectId === recordId);
  if (!ok) throw new AppError('UNAUTHENTICATED', 'invalid or expired stream token');
  return { orgId: row!.orgId, createdBy: row!.createdBy, credentialId: row!.credentialId ?? null };
}

/** The port the route gate verifies stream tokens through (`ctx.ports.streamTokens`). */
export const streamTokenPort: StreamTokenPort = { verify: verifyStreamToken };
