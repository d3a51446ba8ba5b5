/**
 * The runtime owner of an app (026_app_owners): with several instances on one PostgreSQL, the one that
 * runs it, the edge address the others forward its requests to, and its lease (docs/scale-out.md).
 */
export interface AppOwnersTable {
  /** `appKeyOf(projectId, environment)`: the project's id, or a preview environment's key. */
  appKey: string;
  projectId: string;
  /** The owner's `ctx.instanceId` (one per process). */
  instanceId: string;
  /** Its BERTH_INSTANCE_NAME (`default`): a restart of the same instance takes its apps back at once. */
  instanceName: string;
  /** `http://host:port` of the owner's edge (BERTH_INSTANCE_URL). */
  address: string;
  expiresAt: string;
  updatedAt: string;
}

/** A live instance sharing the database (026_app_owners), renewed with its leases. */
export interface BerthInstancesTable {
  instanceId: string;
  instanceName: string;
  address: string;
  startedAt: string;
  expiresAt: string;
}

/**
 * The hosting area's tables: which instance runs each app, and the live instances. (src/db/schema.ts
 * reaches them through `DeploymentsTables`, which extends this, until it composes this one itself.)
 */
export interface HostingTables {
  appOwners: AppOwnersTable;
  berthInstances: BerthInstancesTable;
}
