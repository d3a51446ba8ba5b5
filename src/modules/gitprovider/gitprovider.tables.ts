/** Kysely table interfaces of the git provider area (migrations 006_gitprovider, 023_preview_pulls). */

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
  /** What the delivery is about (migration 029): the same content again within the hour is not queued. */
  dedupeKey: string | null;
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
  gitproviderPreviewPulls: GitproviderPreviewPullsTable;
  gitproviderPreviewDeployments: GitproviderPreviewDeploymentsTable;
  gitproviderPullComments: GitproviderPullCommentsTable;
}

/** A pull request's preview environment in one project (migration 023_preview_pulls). */
export interface GitproviderPreviewPullsTable {
  id: string;
  orgId: string;
  projectId: string;
  /** `pr-<number>`. */
  environment: string;
  repoOwner: string;
  repoName: string;
  number: number;
  headBranch: string;
  headSha: string;
  state: string; // 'open' | 'closed'
  createdAt: string;
  updatedAt: string;
}

/** A deployment the area made of a preview environment, and the `berth/deploy` status it reports on its commit. */
export interface GitproviderPreviewDeploymentsTable {
  id: string;
  orgId: string;
  projectId: string;
  environment: string;
  commitSha: string;
  /** Null between the claim and the deployment's creation. */
  deploymentId: string | null;
  repoOwner: string;
  repoName: string;
  state: string; // GitHub's: 'pending' | 'success' | 'failure' | 'error'
  /** What the status says (a short reason; never a log line or a secret). */
  description: string;
  /** The preview's URL once known (the environment's, then the settled deployment's). */
  previewUrl: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The one comment kept on a pull request per org: its GitHub id, and what serialises its writes. */
export interface GitproviderPullCommentsTable {
  id: string;
  orgId: string;
  repoOwner: string;
  repoName: string;
  number: number;
  commentId: string | null;
  /** Bumped by every change the comment should show. */
  rev: number;
  /** The `rev` the comment at GitHub shows. */
  syncedRev: number;
  /** Held by the writer of the comment until then (one writer at a time, any instance). */
  lockUntil: string | null;
  createdAt: string;
  updatedAt: string;
}
