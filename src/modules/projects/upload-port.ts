import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';

/**
 * What the projects area needs from the uploads area: POST /api/projects/ensure with `sessionId`
 * makes a folder upload the project's source. The uploads area provides it (`ctx.ports.uploadSource`),
 * so that projects never imports uploads (uploads imports projects for the project rows it reads).
 */
export interface UploadSourcePort {
  /**
   * Throws 404 (field sessionId) or 409 unless `sessionId` names an upload of the org ready to become
   * a source, or one a project already consumed and still builds from (`attachedTo` names it).
   */
  check(ctx: AppContext, orgId: string, sessionId: string): Promise<{ attachedTo: string | null }>;
  /** Makes the upload the project's source (config gaps filled from its scan) and consumes the session. */
  attach(ctx: AppContext, actorId: string | null, orgId: string, projectId: string, sessionId: string): Promise<void>;
}

/** The port; without the uploads area no session exists, so a named one is not found. */
export function requireUploadSource(ctx: AppContext): UploadSourcePort {
  const port = ctx.ports.uploadSource;
  if (!port) throw new AppError('NOT_FOUND', 'upload session not found', { field: 'sessionId' });
  return port;
}
