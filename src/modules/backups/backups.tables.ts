/**
 * Kysely table interfaces of the backups area (migration 007_backups). camelCase here, snake_case
 * in SQL. Booleans are 0/1 integers, timestamps ISO-8601 text.
 */

export interface BackupDestinationsTable {
  id: string;
  orgId: string;
  name: string;
  kind: string; // 'local' | 's3'
  /** local: the folder. */
  path: string | null;
  endpoint: string | null;
  region: string | null;
  bucket: string | null;
  prefix: string | null;
  accessKeyId: string | null;
  /** Sealed (AAD `backup-destination:<id>:secretAccessKey`). Never returned. */
  secretAccessKey: string | null;
  forcePathStyle: number;
  createdAt: string;
  updatedAt: string;
}

export interface BackupPoliciesTable {
  id: string;
  orgId: string;
  projectId: string;
  destinationId: string;
  /** The service backed up; the project's `data` volume when the create body names none. */
  serviceId: string;
  cronExpression: string | null;
  timezone: string;
  retainCount: number | null;
  retainDays: number | null;
  enabled: number;
  webhookEnabled: number;
  /** sha256 hex of the webhook token; the token itself is shown once. */
  webhookTokenHash: string | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  nextRunAt: string | null;
  lastSuccessAt: string | null;
  /** 1: each new run is restored into a throwaway instance (managed services; migration 034). */
  verifyRestore: number;
}

export interface BackupRunsTable {
  id: string;
  orgId: string;
  policyId: string;
  projectId: string;
  serviceId: string;
  destinationId: string;
  /** queued | running | uploading | verifying | succeeded | failed | cancelled | server_error */
  status: string;
  trigger: string; // manual | cron | webhook
  protected: number;
  sizeBytes: number | null;
  sha256: string | null;
  /** Final object key (set once the artifact is final). */
  artifactKey: string | null;
  /** Temporary object key while the artifact is written and verified. */
  tempKey: string | null;
  /** The policy id while the run is in flight, null once terminal (unique: one run at a time per policy). */
  activeKey: string | null;
  cancelRequested: number;
  runner: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  updatedAt: string;
  /** When a throwaway restore of this run's artifact answered and held its data (policy verifyRestore). */
  verifiedAt: string | null;
  /** Why that restore did not (Berth's words). */
  verifyError: string | null;
}

export interface BackupRestoresTable {
  id: string;
  orgId: string;
  runId: string;
  projectId: string;
  serviceId: string;
  /** staged | applying | succeeded | failed | cancelled | server_error */
  status: string;
  /** sha256 hex of the one-time confirmation token. */
  tokenHash: string;
  cancelRequested: number;
  runner: string | null;
  createdBy: string;
  createdAt: string;
  expiresAt: string;
  appliedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  updatedAt: string;
  /**
   * Identity of the artifact prepare hashed (local destinations: `dev:ino:size:mtimeNs:ctimeNs`);
   * apply reads that same file without hashing it again. Null: apply hashes while it extracts.
   */
  artifactIdentity: string | null;
}

export interface BackupTables {
  backupDestinations: BackupDestinationsTable;
  backupPolicies: BackupPoliciesTable;
  backupRuns: BackupRunsTable;
  backupRestores: BackupRestoresTable;
}
