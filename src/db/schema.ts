import type { CloudTables } from '../modules/cloud/cloud.tables.js';
import type { BackupTables } from '../modules/backups/backups.tables.js';
import type { ProjectTables } from '../modules/projects/projects.tables.js';
import type { UploadTables } from '../modules/uploads/uploads.tables.js';
import type { DeploymentsTables } from '../modules/deployments/deployments.tables.js';
import type { PermissionTables } from '../modules/permissions/permissions.tables.js';
import type { GitproviderTables } from '../modules/gitprovider/gitprovider.tables.js';
import type { CertificateTables } from '../modules/certificates/certificates.tables.js';
import type { ServicesTables } from '../modules/services/services.tables.js';
import type { NotificationTables } from '../modules/notifications/notifications.tables.js';
import type { MetricsTables } from '../modules/metrics/metrics.tables.js';
/**
 * Kysely table types. Column names are camelCase here and snake_case in the database
 * (CamelCasePlugin). Booleans are integers 0/1, timestamps ISO-8601 text, JSON is text.
 * Each area adds its tables in its own `<area>.tables.ts` and they are composed into `DB` below.
 */

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  passwordHash: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface OrgsTable {
  id: string;
  name: string;
  isTeam: number;
  createdAt: string;
}

export interface MembershipsTable {
  orgId: string;
  userId: string;
  role: string;
  createdAt: string;
}

export interface SessionsTable {
  id: string;
  tokenHash: string;
  userId: string;
  orgId: string;
  createdAt: string;
  expiresAt: string;
  lastSeenAt: string;
}

export interface ApiTokensTable {
  id: string;
  userId: string;
  orgId: string;
  name: string;
  prefix: string;
  tokenHash: string;
  scopes: string | null;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  createdAt: string;
}

export interface GrantsTable {
  id: string;
  orgId: string;
  userId: string;
  resourceType: string;
  resourceId: string;
  permissions: string;
  createdAt: string;
  updatedAt: string;
}

export interface LoginFailuresTable {
  id: string;
  ip: string;
  email: string;
  at: string;
}

export interface AuditEventsTable {
  id: string;
  orgId: string;
  at: string;
  actorId: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  details: string;
}

export interface JobsTable {
  id: string;
  kind: string;
  payload: string;
  status: string;
  attempts: number;
  maxAttempts: number;
  runAt: string;
  lockedBy: string | null;
  lockedUntil: string | null;
  lastError: string | null;
  orgId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface LeasesTable {
  name: string;
  holder: string;
  expiresAt: string;
}

export interface FoundationTables {
  users: UsersTable;
  orgs: OrgsTable;
  memberships: MembershipsTable;
  sessions: SessionsTable;
  apiTokens: ApiTokensTable;
  grants: GrantsTable;
  loginFailures: LoginFailuresTable;
  auditEvents: AuditEventsTable;
  jobs: JobsTable;
  leases: LeasesTable;
}

// Areas add their table interfaces here: `extends FoundationTables, ProjectTables, ...`.
export interface DB extends FoundationTables, ProjectTables, UploadTables, PermissionTables, GitproviderTables, CloudTables, DeploymentsTables, BackupTables, CertificateTables, ServicesTables, NotificationTables, MetricsTables {}
