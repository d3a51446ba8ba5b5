/** Kysely table interfaces of the uploads area (migration 004_uploads). */

export interface UploadSessionsTable {
  id: string;
  orgId: string;
  /** The user who opened the session (the upload token acts for them). */
  createdBy: string;
  /** The project named when the session was opened, then the project the upload was attached to. */
  projectId: string | null;
  name: string | null;
  sizeHint: number | null;
  /** sha256 of the upload token; the token itself is never stored. */
  tokenHash: string;
  /** open -> uploading -> uploaded -> consumed (a failed upload goes back to open). */
  status: string;
  sizeBytes: number | null;
  sha256: string | null;
  files: number | null;
  /** JSON of the last scan answer. */
  scan: string | null;
  createdAt: string;
  expiresAt: string;
  uploadedAt: string | null;
  consumedAt: string | null;
  /** Bytes the upload holds on disk (archive + extracted files) until it is consumed or swept (migration 012). */
  storedBytes: number | null;
  /** While uploading: bytes on disk so far, the instance receiving them, and when it last said so (migration 025). */
  inFlightBytes: number | null;
  inFlightBy: string | null;
  inFlightAt: string | null;
}

export interface UploadTables {
  uploadSessions: UploadSessionsTable;
}
