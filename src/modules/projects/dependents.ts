import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';

/**
 * Records other areas keep under a project (backup policies and runs, upload sessions, ...). The
 * deletion preview counts and names them, and DELETE removes them in the same transaction as the
 * project, then removes their files. An area declares its dependents in its module's `provides`
 * (`projectDependents: [...]`); the projects area reads them as `ctx.ports.projectDependents`.
 */
export interface ProjectDependent {
  /** Key in the deletion preview (`backupPolicies`, `backupRuns`, or a new one). */
  name: string;
  /** Count and names (ids or labels) of the records of `projectId`. */
  preview(db: Db, orgId: string, projectId: string): Promise<{ count: number; names: string[] }>;
  /** Deletes them inside the deletion transaction. */
  remove(tx: Db, orgId: string, projectId: string): Promise<void>;
  /** Stops what runs for these records (managed services), before the transaction and the files' removal. */
  stop?(ctx: AppContext, orgId: string, projectId: string): Promise<void>;
  /** Folders/files to remove after the transaction committed (absolute paths). */
  paths?(ctx: AppContext, orgId: string, projectId: string): string[];
}
