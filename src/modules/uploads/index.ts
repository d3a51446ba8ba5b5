/**
 * The uploads area's surface: the only file other areas import. Folder uploads (sessions, the relay,
 * an upload as a project's source) and the local-folder routes.
 */
export { uploadsModule } from './uploads.routes.js';
export { createSession } from './sessions.service.js';
export { authenticateUpload, checkContentType, checkDeclaredLength, receiveUpload, type UploadAnswer } from './relay.service.js';
export { attachUploadToProject, checkUploadSession, uploadSourceDir } from './source.service.js';
export { sweepUploads } from './sweep.service.js';
export { MAX_UPLOAD_BYTES, SWEEP_EVERY_MS, UPLOAD_CONTENT_TYPES, UPLOAD_TOKEN_HEADER, uploadsRoot } from './upload-layout.js';
export { currentForProject } from './uploads.store.js';
export { UploadSchema } from './uploads.presenters.js';
