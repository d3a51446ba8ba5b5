/**
 * Managed services (contract section 19): databases Berth runs for a project. The outside databases a
 * project attaches by URL and its data volume stay in the projects area's `services` table; the list
 * route shows both.
 */
export interface ManagedServicesTable {
  id: string;
  orgId: string;
  projectId: string;
  kind: string; // 'postgres' | 'mysql' | 'redis' | 'mongodb'
  name: string;
  version: string;
  /** The runtime it was made for (`sandbox`, `process`, `docker`). */
  runtime: string;
  /** What the owner asked for: 'running' | 'stopped'. */
  desired: string;
  status: string; // 'starting' | 'running' | 'stopped' | 'failed'
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
  /** The port it listens on inside its network. */
  port: number;
  /** Sealed JSON `{ username, password, database }` (AAD `managed-service:<id>`). Never returned but by the reveal route. */
  credentials: string;
  /** Why it is `failed` (no secret in it). */
  lastError: string | null;
  /** `production`, or the preview environment this instance serves (issue 37 point 3). */
  environment: string;
  /** A preview's instance: the production service it stands for; null for production's own. */
  sourceId: string | null;
  /** Production's: what a preview's instance starts with: null (empty) or `production` (its last backup). */
  seedFrom: string | null;
  /** The address it last ran on (its box's), asked for again at its next start; null before the first. */
  address: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ServicesTables {
  managedServices: ManagedServicesTable;
}
