/**
 * Projects: create, update, ensure (create-or-update, with an upload as the source), get and list.
 * The routes authorize (the route declarations); these functions keep the domain rules.
 */
import type { Actor } from '../../authz/actor.js';
import { can } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction, type Db } from '../../db/client.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { newId, nowIso, randomString } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { blankConfig, changedFields, DEFAULT_RESOURCES, mergeInput, type ProjectInput } from './project-input.js';
import { projectRecord, type ProjectRecord } from './projects.presenters.js';
import * as store from './projects.store.js';
import * as domainsStore from './domains.store.js';
import * as environmentsStore from './environments.store.js';
import { projectRef } from './projects.resolvers.js';
import * as servicesStore from './services.store.js';
import type { ProjectRow } from './projects.store.js';
import { requireUploadSource } from './upload-port.js';
import { loadOrgRoutes, loadProjectRoutes, type ProjectRoutes } from './project-reads.js';
import { slugify } from './validate.js';

export async function loadRecord(ctx: AppContext, db: Db, orgId: string, id: string): Promise<ProjectRecord> {
  const p = await store.findProject(db, orgId, id);
  if (!p) throw notFound('project');
  return projectRecord(ctx, p, await domainsStore.listDomains(db, orgId, id), await environmentsStore.previewSlugs(db, orgId, id));
}

/** `GET /api/projects/:id` (its domains through the per-server read cache when there is one). */
export async function getProject(ctx: AppContext, row: ProjectRow): Promise<ProjectRecord> {
  const reads = ctx.state.projects?.reads;
  const { domains, previews } = reads ? await reads.routesOf(ctx.db, row.orgId, row.id) : await loadProjectRoutes(ctx.db, row.orgId, row.id);
  return projectRecord(ctx, row, domains, previews);
}

/**
 * The project's answer as JSON written by `write` (the route's serializer): kept with the row and
 * routes the server's reads handed out (`ProjectReads.json`), so a warm read neither presents nor
 * serialises it again, and answers without a promise.
 */
export function getProjectJson(ctx: AppContext, row: ProjectRow, write: (record: ProjectRecord) => string): string | Promise<string> {
  const reads = ctx.state.projects?.reads;
  if (!reads || !Object.isFrozen(row)) return getProject(ctx, row).then(write);
  const routes = reads.routesOf(ctx.db, row.orgId, row.id);
  const text = (r: ProjectRoutes) => reads.json(row, r, () => write(projectRecord(ctx, row, r.domains, r.previews)));
  return routes instanceof Promise ? routes.then(text) : text(routes);
}

// ---------------------------------------------------------------- create / update

async function pickSlug(db: Db, name: string): Promise<string> {
  const base = slugify(name);
  const taken = new Set(await store.slugsLike(db, base));
  if (!taken.has(base)) return base;
  for (let i = 2; i < 100; i++) {
    const s = `${base}-${i}`;
    if (!taken.has(s)) return s;
  }
  return `${base}-${randomString(6)}`;
}

/** Creates a project (records only: no build starts). The caller has been authorized for project:write. */
export async function createProject(ctx: AppContext, actor: Actor, input: ProjectInput & { name: string; localPath?: string | null }): Promise<ProjectRecord> {
  const cfg = mergeInput(blankConfig(input.localPath ?? null), input);
  for (let attempt = 0; ; attempt++) {
    const id = newId('prj');
    const now = nowIso();
    const slug = attempt === 0 ? await pickSlug(ctx.db, cfg.name) : `${slugify(cfg.name).slice(0, 33)}-${randomString(6)}`;
    try {
      await transaction(ctx.db, async (tx) => {
        await store.insertProject(tx, {
          id,
          orgId: actor.orgId,
          ...cfg,
          slug,
          status: 'enabled',
          location: 'local',
          nodeVersion: null,
          sleepMode: 'always_on',
          autoDeploy: 0,
          webhookDomain: null,
          webhookId: null,
          resources: JSON.stringify(DEFAULT_RESOURCES),
          createdAt: now,
          updatedAt: now,
        });
        await environmentsStore.insertEnvironment(tx, {
          id: newId('env'),
          orgId: actor.orgId,
          projectId: id,
          name: 'production',
          type: 'production',
          branch: cfg.gitBranch,
          envRevision: 0,
          createdAt: now,
        });
        await servicesStore.insertService(tx, { id: newId('svc'), orgId: actor.orgId, projectId: id, kind: 'volume', name: 'data', connectionUrl: null, createdAt: now });
        await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'project.create', resourceType: 'project', resourceId: id, details: { name: cfg.name, slug } });
      });
      return loadRecord(ctx, ctx.db, actor.orgId, id);
    } catch (e) {
      // Two creates raced for the same slug: take a random suffix.
      if (isUniqueViolation(e) && attempt < 3) continue;
      throw e;
    }
  }
}

/** Partial update of the flat config fields. */
export async function updateProjectConfig(ctx: AppContext, actor: Actor, row: ProjectRow, input: ProjectInput): Promise<ProjectRecord> {
  const cfg = mergeInput(row, input);
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, { ...cfg, updatedAt: nowIso() });
    if (input.gitBranch !== undefined && cfg.gitBranch !== row.gitBranch) await environmentsStore.setProductionBranch(tx, row.orgId, row.id, cfg.gitBranch);
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.update', resourceType: 'project', resourceId: row.id, details: { fields: changedFields(input) } });
  });
  return loadRecord(ctx, ctx.db, row.orgId, row.id);
}

export interface EnsureInput extends ProjectInput {
  projectId?: string;
  /** A folder upload that becomes the project's source (uploads area, through `ctx.ports.uploadSource`). */
  sessionId?: string;
}

/**
 * POST /api/projects/ensure: create a project, or update `row` (the body's `projectId`, which the
 * route resolved and authorized: project:write on it, or org-wide when there is none) in place.
 * With `sessionId`, the upload becomes the project's source.
 */
export async function ensureProject(ctx: AppContext, actor: Actor, row: ProjectRow | undefined, input: EnsureInput): Promise<{ project: ProjectRecord; created: boolean }> {
  // A self-hosted instance's record of a cloud project is not where its config and source live:
  // refuse before anything is checked out or changed (the per-project routes are forwarded).
  if (row?.location === 'cloud') {
    throw conflict('this project lives on the cloud: change it with PATCH /api/projects/:id (forwarded to the cloud) or upload to it on the cloud', 'projectId');
  }
  const { projectId: _projectId, sessionId, ...fields } = input;
  if (!sessionId) return ensureFields(ctx, actor, row, fields);
  // The upload first (a bad id leaves nothing half-made), then the project, then the upload becomes its source.
  const uploads = requireUploadSource(ctx);
  const { attachedTo } = await uploads.check(ctx, actor.orgId, sessionId);
  if (attachedTo) {
    // The same ensure again (a retry, or a client that sends the session twice): the upload already is the source.
    const target = row ?? (await retriedProject(ctx, actor, attachedTo, fields.name));
    if (target?.id !== attachedTo) throw conflict('this upload is already the source of another project: open a new session', 'sessionId');
    const out = await ensureFields(ctx, actor, target, { ...fields, gitProvider: 'upload' });
    return { project: out.project, created: false };
  }
  const out = await ensureFields(ctx, actor, row, { ...fields, gitProvider: 'upload' });
  await uploads.attach(ctx, actor.userId, actor.orgId, out.project.id, sessionId);
  return { project: await loadRecord(ctx, ctx.db, actor.orgId, out.project.id), created: out.created };
}

/**
 * An ensure without `projectId` whose upload a project already consumed: that project, when the
 * caller may change it and the ensure names it (or no name at all); else undefined (409).
 */
async function retriedProject(ctx: AppContext, actor: Actor, projectId: string, name: string | undefined): Promise<ProjectRow | undefined> {
  const p = await store.findProject(ctx.db, actor.orgId, projectId);
  if (!p || !can(actor, 'project:write', projectRef(p))) return undefined;
  return name === undefined || name === p.name ? p : undefined;
}

async function ensureFields(ctx: AppContext, actor: Actor, row: ProjectRow | undefined, fields: ProjectInput): Promise<{ project: ProjectRecord; created: boolean }> {
  if (row) return { project: await updateProjectConfig(ctx, actor, row, fields), created: false };
  if (fields.name === undefined) throw invalid('name', 'name is required');
  return { project: await createProject(ctx, actor, { ...fields, name: fields.name }), created: true };
}

// ---------------------------------------------------------------- reads

/** Projects of the actor's org that it can read (a restricted member sees only its granted ones). */
export async function listProjects(ctx: AppContext, actor: Actor): Promise<ProjectRecord[]> {
  const rows = (await store.listProjects(ctx.db, actor.orgId)).filter((r) => can(actor, 'project:read', projectRef(r)));
  if (rows.length === 0) return [];
  const reads = ctx.state.projects?.reads;
  const { domains, previews } = reads ? await reads.orgRoutesOf(ctx.db, actor.orgId) : await loadOrgRoutes(ctx.db, actor.orgId);
  return rows.map((r) => projectRecord(ctx, r, domains.get(r.id) ?? [], previews.get(r.id) ?? []));
}

/** Home feed: local projects, merged with their live cloud records by the cloud area (`ctx.ports.cloud`) when linked. */
export async function home(ctx: AppContext, actor: Actor): Promise<{ projects: ProjectRecord[]; cloudUnreachable: boolean }> {
  const local = await listProjects(ctx, actor);
  return ctx.ports.cloud ? ctx.ports.cloud.mergeHome(actor, local) : { projects: local, cloudUnreachable: false };
}

// ---------------------------------------------------------------- for the uploads area

/** Build config detected in an uploaded folder (the uploads area's scan), as far as a project takes it. */
export type DetectedConfig = Partial<Record<(typeof CONFIG_FROM_SCAN)[number], string | null>> & { port?: number | null };

const CONFIG_FROM_SCAN = ['framework', 'installCommand', 'buildCommand', 'startCommand', 'outputDirectory', 'rootDirectory', 'packageManager', 'runtime'] as const;

/**
 * Inside the attaching transaction: the project's source becomes its uploaded folder (`gitProvider:
 * "upload"`). Config fields the project (its row as read in that transaction) leaves empty are filled
 * from the scan of the upload, and its port too when the project had no build config at all.
 */
export async function useUploadAsSource(tx: Db, project: ProjectRow, scan: DetectedConfig | null): Promise<void> {
  const patch: Record<string, unknown> = { sourceType: 'upload', gitProvider: 'upload', updatedAt: nowIso() };
  if (scan) {
    const unconfigured = !project.framework && !project.startCommand && !project.buildCommand;
    for (const k of CONFIG_FROM_SCAN) {
      const v = scan[k];
      if (project[k] == null && typeof v === 'string' && v !== '') patch[k] = v;
    }
    if (unconfigured && typeof scan.port === 'number') patch.port = scan.port;
  }
  await store.updateProject(tx, project.orgId, project.id, patch);
}

/** The id of the org's project that imports the local folder `localPath`, if any. */
export async function projectImporting(ctx: AppContext, orgId: string, localPath: string): Promise<string | undefined> {
  return (await store.findProjectByLocalPath(ctx.db, orgId, localPath))?.id;
}
