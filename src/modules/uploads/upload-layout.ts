/**
 * Folder uploads' limits, lifetimes and disk layout under `<dataDir>/uploads/`:
 *   .tmp/<sessionId>-<rand>/            an upload in flight (archive + extracted tree); removed on any failure
 *   .sessions/<sessionId>/src/          an upload received and extracted, waiting for ensure
 *   .sessions/<sessionId>/source.tar.gz the archive as received (sha256 in the session row)
 *   <projectId>/current/                the project's current uploaded source (what the next build copies)
 *   <projectId>/source.tar.gz           its archive;  <projectId>/source.json  { sessionId, sha256, sizeBytes, files, attachedAt }
 */
import path from 'node:path';
import type { AppContext } from '../../context.js';

/** The relay's limit (seed: 300 MB), in bytes. */
export const MAX_UPLOAD_BYTES = 300 * 1000 * 1000;
/** Time to upload after opening a session. */
export const SESSION_TTL_MS = 60 * 60 * 1000;
/** Time to scan and ensure after the upload arrived; then the sweep removes it (contract section 17). */
export const UPLOADED_TTL_MS = 60 * 60 * 1000;
/** How often the sweep runs: an expired upload's files are gone within a minute of its expiry. */
export const SWEEP_EVERY_MS = 60 * 1000;
export const UPLOAD_TOKEN_HEADER = 'x-berth-upload-token';
export const UPLOAD_CONTENT_TYPES = ['application/gzip', 'application/x-gzip', 'application/octet-stream'];

/** What the uploads services need from the running program. */
export type Deps = Pick<AppContext, 'db' | 'dialect' | 'config' | 'log' | 'ports' | 'state' | 'instanceId' | 'clock'>;

export function uploadsRoot(ctx: Pick<AppContext, 'config'>): string {
  return path.join(ctx.config.dataDir, 'uploads');
}

export const stagedDir = (ctx: Pick<AppContext, 'config'>, sessionId: string) => path.join(uploadsRoot(ctx), '.sessions', path.basename(sessionId));
export const projectDir = (ctx: Pick<AppContext, 'config'>, projectId: string) => path.join(uploadsRoot(ctx), path.basename(projectId));
