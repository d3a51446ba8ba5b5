import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';
import {
  attachUploadToProject,
  authenticateUpload,
  createSession,
  receiveUpload,
  UPLOAD_TOKEN_HEADER,
  uploadSourceDir,
  uploadsRoot,
} from '../uploads/index.js';
import { projectQueries, projectTransfers } from '../projects/index.js';

/**
 * The uploaded source of a project (folder-upload projects): its gzipped tarball as received, kept by
 * the uploads area at `<dataDir>/uploads/<projectId>/source.tar.gz`, with its sha256 in the session row.
 */
export interface SourceArchiveMeta {
  sha256: string;
  sizeBytes: number;
}

/** The archive file of the project's current uploaded source, or null. */
export async function sourceArchivePath(ctx: AppContext, orgId: string, projectId: string): Promise<string | null> {
  if (!(await uploadSourceDir(ctx, orgId, projectId))) return null;
  const file = path.join(uploadsRoot(ctx), path.basename(projectId), 'source.tar.gz');
  return existsSync(file) ? file : null;
}

const CONFIG_COLUMNS = ['framework', 'installCommand', 'buildCommand', 'startCommand', 'outputDirectory', 'rootDirectory', 'packageManager', 'runtime', 'port', 'sourceType', 'gitProvider'] as const;

/**
 * Makes `body` (a gzipped tarball) the project's uploaded source through the uploads area's own
 * session, relay and attach steps (safe extraction, byte limit, hashing), and checks its sha256
 * against `expectedSha256`. The project's config is kept exactly as it was: a transfer copies config
 * as it is, it does not re-detect it.
 */
export async function receiveSourceArchive(
  ctx: AppContext,
  actor: Actor,
  orgId: string,
  projectId: string,
  body: AsyncIterable<Buffer | string>,
  expectedSha256?: string,
): Promise<SourceArchiveMeta> {
  const before = await projectQueries.findProject(ctx.db, orgId, projectId);
  if (!before) throw new AppError('NOT_FOUND', 'project not found');
  const session = await createSession(ctx, actor, { projectId }, { allowCloudProject: true });
  const row = await authenticateUpload(ctx, session.sessionId, session.headers[UPLOAD_TOKEN_HEADER]);
  const got = await receiveUpload(ctx, row, body);
  if (expectedSha256 && got.sha256 !== expectedSha256) {
    throw new AppError('VALIDATION_FAILED', 'the source archive arrived altered (sha256 mismatch); nothing was attached', { field: 'sha256' });
  }
  await attachUploadToProject(ctx, actor.userId, orgId, projectId, session.sessionId);
  const keep: Record<string, unknown> = {};
  for (const k of CONFIG_COLUMNS) keep[k] = before[k];
  await projectTransfers.updateTransferredProject(ctx.db, orgId, projectId, keep);
  return { sha256: got.sha256, sizeBytes: got.sizeBytes };
}
