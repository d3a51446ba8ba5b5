/** Kysely table interfaces of the cloud area (migration 008_cloud). */

/**
 * On a self-hosted instance: which cloud project a local record of `location: "cloud"` stands for.
 * One row per cloud project of this instance; removed when the project comes back or is deleted.
 */
export interface CloudLinksTable {
  /** The local project id (the record the per-project routes resolve). */
  projectId: string;
  orgId: string;
  /** The project's id on the cloud instance (usually equal to projectId, see docs/cloud.md). */
  cloudProjectId: string;
  createdAt: string;
}

export interface CloudTables {
  cloudLinks: CloudLinksTable;
}
