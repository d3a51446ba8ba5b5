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
  createdAt: string;
  updatedAt: string;
}

export interface ServicesTables {
  managedServices: ManagedServicesTable;
}
