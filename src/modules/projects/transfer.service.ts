/**
 * A project copied whole, for the cloud area's transfers and bundles: read every row it keeps, write
 * them back (a new project, or over an existing one), and the instance-wide checks a copy needs (is
 * the id or slug free, which domains another project verified, where a project lives). The rows are
 * the projects area's; what they become on the wire (the bundle, its secrets) is the cloud area's.
 */
import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../../db/client.js';
import * as store from './projects.store.js';
import type { ProjectsTable } from './projects.tables.js';
import * as whole from './whole-project.store.js';
import type { NewProjectRows, ProjectRows } from './whole-project.store.js';

export type { NewProjectRows, ProjectRows };

/** Every row of one project of `orgId` (undefined: none there). */
export function exportProject(db: Db, orgId: string, projectId: string): Promise<ProjectRows | undefined> {
  return whole.readProjectRows(db, orgId, projectId);
}

/** How a copy's project row lands: a new project, or the columns of an existing one replaced. */
export type ImportTarget =
  | { replace: false; project: Insertable<ProjectsTable> }
  | { replace: true; orgId: string; projectId: string; columns: Updateable<ProjectsTable> };

/**
 * Writes a copied project: its row (inserted, or updated with the rows under it cleared first) and
 * the rows under it. Call inside a transaction.
 */
export async function importProject(tx: Db, target: ImportTarget, rows: NewProjectRows): Promise<void> {
  if (target.replace) {
    await store.updateProject(tx, target.orgId, target.projectId, target.columns);
    await whole.clearProjectRows(tx, target.orgId, target.projectId);
  } else {
    await store.insertProject(tx, target.project);
  }
  await whole.insertProjectRows(tx, rows);
}

/** Changes columns of a project's row during a transfer (where it lives; the config a source upload must not change). */
export function updateTransferredProject(db: Db, orgId: string, projectId: string, columns: Updateable<ProjectsTable>): Promise<void> {
  return store.updateProject(db, orgId, projectId, columns);
}

/** A project by id alone, with its org and where it lives: only for per-project routes relayed to the cloud. */
export function findProjectAnyOrg(db: Db, id: string): Promise<{ id: string; orgId: string; location: string } | undefined> {
  return whole.findProjectAnyOrg(db, id);
}

/** Whether any org of this instance has a project of this id (ids are kept across instances). */
export function isProjectIdTaken(db: Db, id: string): Promise<boolean> {
  return whole.projectIdTaken(db, id);
}

/** Whether a project of this instance has this slug (slugs make the free domains). */
export function isSlugTaken(db: Db, slug: string): Promise<boolean> {
  return store.slugTaken(db, slug);
}

/** Which of `domains` another project of the instance (but `projectId`) has verified. */
export function findDomainsHeldElsewhere(db: Db, domains: string[], projectId: string | null): Promise<string[]> {
  return whole.domainsHeldElsewhere(db, domains, projectId);
}

/** The transfers' work on projects as one object (the cloud area's only way to copy a project whole). */
export const projectTransfers = {
  exportProject,
  importProject,
  updateTransferredProject,
  findProjectAnyOrg,
  isProjectIdTaken,
  isSlugTaken,
  findDomainsHeldElsewhere,
} as const;
