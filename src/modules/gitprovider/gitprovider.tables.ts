/** Kysely table interfaces of the git provider area (migration 006_gitprovider). */

export interface GitproviderInstallationsTable {
  id: string;
  /** GitHub's installation id, as text. */
  installationId: string;
  /** Null until an org claims it (connect/redirect with a signed state). */
  orgId: string | null;
  accountLogin: string;
  accountType: string; // 'User' | 'Organization'
  accountId: string | null;
  claimedBy: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface GitproviderConnectionsTable {
  id: string;
  orgId: string;
  source: string; // 'oauth' | 'cli'
  login: string;
  accountType: string;
  /** Sealed OAuth token (AAD `gitprovider:oauth:<orgId>`); null for the CLI source. */
  token: string | null;
  createdBy: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface GitproviderUsedStatesTable {
  nonce: string;
  orgId: string;
  expiresAt: string;
  usedAt: string;
}

export interface GitproviderDeviceFlowsTable {
  id: string;
  orgId: string;
  userId: string;
  /** Sealed (AAD `gitprovider:device:<id>`). */
  deviceCode: string;
  intervalSeconds: number;
  status: string; // 'pending' | 'connected' | 'expired' | 'denied'
  expiresAt: string;
  lastPolledAt: string | null;
  createdAt: string;
}

export interface GitproviderDeliveriesTable {
  deliveryId: string;
  event: string;
  hookId: string | null;
  payload: string;
  status: string; // 'queued' | 'done' | 'failed'
  result: string | null;
  receivedAt: string;
}

export interface GitproviderProjectNoticesTable {
  projectId: string;
  orgId: string;
  reason: string;
  at: string;
}

export interface GitproviderTables {
  gitproviderInstallations: GitproviderInstallationsTable;
  gitproviderConnections: GitproviderConnectionsTable;
  gitproviderUsedStates: GitproviderUsedStatesTable;
  gitproviderDeviceFlows: GitproviderDeviceFlowsTable;
  gitproviderDeliveries: GitproviderDeliveriesTable;
  gitproviderProjectNotices: GitproviderProjectNoticesTable;
}
