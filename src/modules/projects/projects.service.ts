import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Actor } from '../../authz/actor.js';
import { authorize, can } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction, type Db } from '../../db/client.js';
import { conflict, forbidden, invalid, notFound } from '../../lib/errors.js';
import { newId, nowIso, randomString } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/audit.store.js';
import { invalidateAuthCache } from '../auth/auth.service.js';
import { mergeCloudHome } from '../cloud/home.js';
import { linkStatus } from '../cloud/link.js';
import { projectDependents } from './dependents.js';
import * as store from './projects.store.js';
import type { DeploymentRow, DomainRow, EnvironmentRow, ProjectRow } from './projects.store.js';
import { getRuntimePort } from './runtime-port.js';
import { ensureWithUpload } from '../uploads/uploads.service.js';
import { checkBranch, checkGitOwner, checkGitRepo, checkRelativeDir, slugify } from './validate.js';

// ---------------------------------------------------------------- records (contract section 5)

export interface ProjectRecord {
  id: string;
  orgId: string;
  name: string;
  slug: string;
  status: 'enabled' | 'disabled';
  location: 'local' | 'cloud';
  config: {
    framework: string | null;
    installCommand: string | null;
    buildCommand: string | null;
    startCommand: string | null;
    outputDirectory: string | null;
    rootDirectory: string | null;
    port: number;
    packageManager: string | null;
    runtime: string | null;
  };
  source: {
    type: 'git' | 'local' | 'upload' | 'none';
    gitProvider: string | null;
    gitOwner: string | null;
    gitRepo: string | null;
    gitBranch: string | null;
    localPath: string | null;
  };
  routes: { freeDomain: string; primaryDomain: string; domains: { domain: string; primary: boolean; createdAt: string }[] };
  sleepMode: 'auto_sleep' | 'always_on';
  autoDeploy: boolean;
  createdAt: string;
  updatedAt: string;
}

export function freeDomainOf(ctx: AppContext, slug: string): string {
  return `${slug}.${ctx.config.appsDomain}`;
}

export function projectRecord(ctx: AppContext, p: ProjectRow, domains: DomainRow[]): ProjectRecord {
  const freeDomain = freeDomainOf(ctx, p.slug);
  const primary = domains.find((d) => d.isPrimary === 1);
  return {
    id: p.id,
    orgId: p.orgId,
    name: p.name,
    slug: p.slug,
    status: p.status as ProjectRecord['status'],
    location: p.location as ProjectRecord['location'],
    config: {
      framework: p.framework,
      installCommand: p.installCommand,
      buildCommand: p.buildCommand,
      startCommand: p.startCommand,
      outputDirectory: p.outputDirectory,
      rootDirectory: p.rootDirectory,
      port: p.port,
      packageManager: p.packageManager,
      runtime: p.runtime,
    },
    source: {
      type: p.sourceType as ProjectRecord['source']['type'],
      gitProvider: p.gitProvider,
      gitOwner: p.gitOwner,
      gitRepo: p.gitRepo,
      gitBranch: p.gitBranch,
      localPath: p.localPath,
    },
    routes: {
      freeDomain,
      primaryDomain: primary ? primary.domain : freeDomain,
      domains: domains.map((d) => ({ domain: d.domain, primary: d.isPrimary === 1, createdAt: d.createdAt })),
    },
    sleepMode: p.sleepMode as ProjectRecord['sleepMode'],
    autoDeploy: p.autoDeploy === 1,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}

export async function loadRecord(ctx: AppContext, db: Db, orgId: string, id: string): Promise<ProjectRecord> {
  const p = await store.findProject(db, orgId, id);
  if (!p) throw notFound('project');
  return projectRecord(ctx, p, await store.listDomains(db, orgId, id));
}

/** The record of a project row the gate already loaded (one query for its domains). */
export async function getProject(ctx: AppContext, row: ProjectRow): Promise<ProjectRecord> {
  return projectRecord(ctx, row, await store.listDomains(ctx.db, row.orgId, row.id));
}

/** The project row a gated route resolved (the gate already authorized the actor on it). */
export function resolvedProject(resource: { record?: unknown } | undefined): ProjectRow {
  const row = resource?.record as ProjectRow | undefined;
  if (!row) throw notFound('project');
  return row;
}

// ---------------------------------------------------------------- create / update

export const DEFAULT_PORT = 3000;

export const DEFAULT_RESOURCES = {
  production: { cpuCores: 1, memoryMb: 512, diskMb: 1024 },
  build: { cpuCores: 2, memoryMb: 2048, diskMb: 4096 },
};

/** The flat create body (seed fields plus contract section 5's additions); every field but name optional. */
export interface ProjectInput {
  name?: string;
  gitOwner?: string | null;
  gitRepo?: string | null;
  gitBranch?: string | null;
  framework?: string | null;
  buildCommand?: string | null;
  gitProvider?: string | null;
  installCommand?: string | null;
  startCommand?: string | null;
  outputDirectory?: string | null;
  rootDirectory?: string | null;
  port?: number;
  packageManager?: string | null;
  runtime?: string | null;
}

type ConfigColumns = Pick<
  ProjectRow,
  | 'name'
  | 'gitOwner'
  | 'gitRepo'
  | 'gitBranch'
  | 'framework'
  | 'buildCommand'
  | 'gitProvider'
  | 'installCommand'
  | 'startCommand'
  | 'outputDirectory'
  | 'rootDirectory'
  | 'port'
  | 'packageManager'
  | 'runtime'
  | 'sourceType'
  | 'localPath'
>;

const emptyToNull = (v: string | null | undefined): string | null | undefined => (typeof v === 'string' && v.trim() === '' ? null : v);

/** Validates the given fields and merges them over `base`; derives the source type. */
function mergeInput(base: ConfigColumns, input: ProjectInput): ConfigColumns {
  const out: ConfigColumns = { ...base };
  if (input.name !== undefined) {
    const name = input.name.trim();
    if (!name) throw invalid('name', 'name must not be empty');
    out.name = name;
  }
  const str = (k: 'framework' | 'buildCommand' | 'installCommand' | 'startCommand' | 'packageManager' | 'runtime') => {
    const v = emptyToNull(input[k]);
    if (v !== undefined) out[k] = v === null ? null : v.trim();
  };
  for (const k of ['framework', 'buildCommand', 'installCommand', 'startCommand', 'packageManager', 'runtime'] as const) str(k);
  for (const k of ['outputDirectory', 'rootDirectory'] as const) {
    const v = emptyToNull(input[k]);
    if (v !== undefined) out[k] = v === null ? null : checkRelativeDir(v, k);
  }
  if (input.port !== undefined) out.port = input.port;
  const owner = emptyToNull(input.gitOwner);
  if (owner !== undefined) out.gitOwner = owner === null ? null : checkGitOwner(owner, 'gitOwner');
  const repo = emptyToNull(input.gitRepo);
  if (repo !== undefined) out.gitRepo = repo === null ? null : checkGitRepo(repo, 'gitRepo');
  const branch = emptyToNull(input.gitBranch);
  if (branch !== undefined) out.gitBranch = branch === null ? null : checkBranch(branch, 'gitBranch');
  const provider = emptyToNull(input.gitProvider);
  if (provider !== undefined) out.gitProvider = provider === null ? null : provider.trim().toLowerCase();

  if (out.gitProvider === 'upload') {
    out.sourceType = 'upload';
  } else if (out.gitOwner || out.gitRepo) {
    if (!out.gitOwner) throw invalid('gitOwner', 'gitOwner is required when gitRepo is set');
    if (!out.gitRepo) throw invalid('gitRepo', 'gitRepo is required when gitOwner is set');
    out.sourceType = 'git';
    out.gitProvider = out.gitProvider ?? 'github';
  } else if (out.localPath) {
    out.sourceType = 'local';
  } else {
    out.sourceType = 'none';
  }
  return out;
}

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
  const blank: ConfigColumns = {
    name: '',
    gitOwner: null,
    gitRepo: null,
    gitBranch: null,
    framework: null,
    buildCommand: null,
    gitProvider: null,
    installCommand: null,
    startCommand: null,
    outputDirectory: null,
    rootDirectory: null,
    port: DEFAULT_PORT,
    packageManager: null,
    runtime: null,
    sourceType: 'none',
    localPath: input.localPath ?? null,
  };
  const cfg = mergeInput(blank, input);
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
        await store.insertEnvironment(tx, {
          id: newId('env'),
          orgId: actor.orgId,
          projectId: id,
          name: 'production',
          type: 'production',
          branch: cfg.gitBranch,
          envRevision: 0,
          createdAt: now,
        });
        await store.insertService(tx, { id: newId('svc'), orgId: actor.orgId, projectId: id, kind: 'volume', name: 'data', connectionUrl: null, createdAt: now });
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
  const changed = Object.keys(input).filter((k) => (input as Record<string, unknown>)[k] !== undefined);
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, { ...cfg, updatedAt: nowIso() });
    if (input.gitBranch !== undefined && cfg.gitBranch !== row.gitBranch) await store.setProductionBranch(tx, row.orgId, row.id, cfg.gitBranch);
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.update', resourceType: 'project', resourceId: row.id, details: { fields: changed } });
  });
  return loadRecord(ctx, ctx.db, row.orgId, row.id);
}

export interface EnsureInput extends ProjectInput {
  projectId?: string;
  /** A folder upload that becomes the project's source (uploads area). */
  sessionId?: string;
}

/**
 * POST /api/projects/ensure: create a project, or update `projectId` in place. Authorization is
 * checked here (the route's body names the project): another org's or a missing id is 404, a
 * project the actor may not write is 403.
 */
export async function ensureProject(ctx: AppContext, actor: Actor, input: EnsureInput): Promise<{ project: ProjectRecord; created: boolean }> {
  const row = input.projectId ? await store.findProject(ctx.db, actor.orgId, input.projectId) : undefined;
  if (input.projectId) {
    authorize(actor, 'project:write', row ? store.projectRef(row) : null, 'project');
    // A self-hosted instance's record of a cloud project is not where its config and source live:
    // refuse before anything is checked out or changed (the per-project routes are forwarded).
    if (row!.location === 'cloud') {
      throw conflict('this project lives on the cloud: change it with PATCH /api/projects/:id (forwarded to the cloud) or upload to it on the cloud', 'projectId');
    }
  }
  if (input.sessionId) return ensureWithUpload(ctx, actor, { ...input, sessionId: input.sessionId }, ensureProject);
  const { projectId: _projectId, sessionId: _sessionId, ...fields } = input;
  if (row) return { project: await updateProjectConfig(ctx, actor, row, fields), created: false };
  if (!can(actor, 'project:write')) throw forbidden('you do not have permission to create projects (project:write)');
  if (fields.name === undefined) throw invalid('name', 'name is required');
  return { project: await createProject(ctx, actor, { ...fields, name: fields.name }), created: true };
}

// ---------------------------------------------------------------- reads

/** Projects of the actor's org that it can read (a restricted member sees only its granted ones). */
export async function listProjects(ctx: AppContext, actor: Actor): Promise<ProjectRecord[]> {
  const rows = (await store.listProjects(ctx.db, actor.orgId)).filter((r) => can(actor, 'project:read', store.projectRef(r)));
  if (rows.length === 0) return [];
  const domains = await ctx.db.selectFrom('domains').selectAll().where('orgId', '=', actor.orgId).orderBy('createdAt', 'asc').orderBy('domain', 'asc').execute();
  const byProject = new Map<string, DomainRow[]>();
  for (const d of domains) {
    const list = byProject.get(d.projectId) ?? [];
    list.push(d);
    byProject.set(d.projectId, list);
  }
  return rows.map((r) => projectRecord(ctx, r, byProject.get(r.id) ?? []));
}

/** Home feed: local projects (the cloud merge is added by the cloud area). */
export async function home(ctx: AppContext, actor: Actor): Promise<{ projects: ProjectRecord[]; cloudUnreachable: boolean }> {
  return mergeCloudHome(ctx, actor, await listProjects(ctx, actor));
}

export interface EnvironmentRecord {
  id: string;
  name: string;
  type: 'production' | 'preview';
  branch: string | null;
  createdAt: string;
}

export function environmentRecord(e: EnvironmentRow): EnvironmentRecord {
  return { id: e.id, name: e.name, type: e.type as EnvironmentRecord['type'], branch: e.branch, createdAt: e.createdAt };
}

export async function listEnvironments(ctx: AppContext, row: ProjectRow): Promise<EnvironmentRecord[]> {
  return (await store.listEnvironments(ctx.db, row.orgId, row.id)).map(environmentRecord);
}

export async function createEnvironment(ctx: AppContext, actor: Actor, row: ProjectRow, input: { name: string; branch?: string }): Promise<EnvironmentRecord> {
  const name = input.name.trim().toLowerCase();
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) throw invalid('name', 'name must be lowercase letters, digits and dashes (at most 63 characters)');
  const branch = input.branch === undefined || input.branch.trim() === '' ? null : checkBranch(input.branch, 'branch');
  const existing = await store.findEnvironment(ctx.db, row.orgId, row.id, name);
  if (existing) throw conflict(`this project already has an environment named "${name}"`, 'name');
  const env = { id: newId('env'), orgId: row.orgId, projectId: row.id, name, type: 'preview', branch, envRevision: 0, createdAt: nowIso() };
  try {
    await transaction(ctx.db, async (tx) => {
      await store.insertEnvironment(tx, env);
      await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.environment.create', resourceType: 'project', resourceId: row.id, details: { environment: name } });
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(`this project already has an environment named "${name}"`, 'name');
    throw e;
  }
  return environmentRecord(env);
}

// ---------------------------------------------------------------- options, status, routing

export interface OptionsInput {
  installCommand?: string | null;
  buildCommand?: string | null;
  startCommand?: string | null;
  outputDirectory?: string | null;
  rootDirectory?: string | null;
  nodeVersion?: string | null;
}

export interface OptionsRecord {
  installCommand: string | null;
  buildCommand: string | null;
  startCommand: string | null;
  outputDirectory: string | null;
  rootDirectory: string | null;
  nodeVersion: string | null;
}

export async function setOptions(ctx: AppContext, actor: Actor, row: ProjectRow, input: OptionsInput): Promise<OptionsRecord> {
  const merged = mergeInput(row, {
    installCommand: input.installCommand,
    buildCommand: input.buildCommand,
    startCommand: input.startCommand,
    outputDirectory: input.outputDirectory,
    rootDirectory: input.rootDirectory,
  });
  let nodeVersion = row.nodeVersion;
  const nv = emptyToNull(input.nodeVersion);
  if (nv !== undefined) {
    if (nv !== null && !/^(?:lts(?:\/[a-z]+)?|latest|current|v?\d+(?:\.(?:\d+|x))?(?:\.(?:\d+|x))?)$/i.test(nv.trim())) {
      throw invalid('nodeVersion', 'nodeVersion must be a Node.js version such as 20, 20.11 or 20.11.1 (or lts)');
    }
    nodeVersion = nv === null ? null : nv.trim();
  }
  const changed = Object.keys(input).filter((k) => (input as Record<string, unknown>)[k] !== undefined);
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, {
      installCommand: merged.installCommand,
      buildCommand: merged.buildCommand,
      startCommand: merged.startCommand,
      outputDirectory: merged.outputDirectory,
      rootDirectory: merged.rootDirectory,
      nodeVersion,
      updatedAt: nowIso(),
    });
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.options', resourceType: 'project', resourceId: row.id, details: { fields: changed } });
  });
  return {
    installCommand: merged.installCommand,
    buildCommand: merged.buildCommand,
    startCommand: merged.startCommand,
    outputDirectory: merged.outputDirectory,
    rootDirectory: merged.rootDirectory,
    nodeVersion,
  };
}

/** Runs a runtime hook after commit; a failure is logged and does not undo the recorded change. */
async function afterCommit(ctx: AppContext, what: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (e) {
    ctx.log.warn({ err: e, what }, 'runtime hook failed');
  }
}

export async function setStatus(ctx: AppContext, actor: Actor, row: ProjectRow, status: 'enabled' | 'disabled'): Promise<ProjectRecord> {
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, { status, updatedAt: nowIso() });
    await insertAuditEvent(tx, {
      orgId: row.orgId,
      actorId: actor.userId,
      action: status === 'enabled' ? 'project.enable' : 'project.disable',
      resourceType: 'project',
      resourceId: row.id,
    });
  });
  const rt = getRuntimePort();
  if (rt) {
    await afterCommit(ctx, `project.${status}`, () => (status === 'enabled' ? rt.bringOnline(ctx, row.orgId, row.id) : rt.takeOffline(ctx, row.orgId, row.id)));
  }
  return loadRecord(ctx, ctx.db, row.orgId, row.id);
}

export interface RoutingAttemptRecord {
  attemptId: string;
  domain: string;
  status: 'recorded' | 'synced' | 'failed';
  error: string | null;
  attemptedAt: string;
}

/** Records a routing sync attempt of the free domain and asks the runtime (when there is one) to re-sync it. */
export async function retryRouting(ctx: AppContext, actor: Actor, row: ProjectRow): Promise<RoutingAttemptRecord> {
  const domain = freeDomainOf(ctx, row.slug);
  const rt = getRuntimePort();
  let status: RoutingAttemptRecord['status'] = 'recorded';
  let error: string | null = null;
  if (rt) {
    try {
      const r = await rt.syncRouting(ctx, row.orgId, row.id, domain);
      status = r.status;
      error = r.error ?? null;
    } catch (e) {
      status = 'failed';
      error = 'the edge route could not be synced';
      ctx.log.warn({ err: e, projectId: row.id }, 'routing sync failed');
    }
  }
  const rec = { attemptId: newId('rta'), domain, status, error, attemptedAt: nowIso() };
  await transaction(ctx.db, async (tx) => {
    await store.insertRoutingAttempt(tx, { id: rec.attemptId, orgId: row.orgId, projectId: row.id, domain, status, error, createdAt: rec.attemptedAt });
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.routing.retry', resourceType: 'project', resourceId: row.id, details: { domain, status } });
  });
  return rec;
}

// ---------------------------------------------------------------- info

export interface DeploymentRecord {
  id: string;
  projectId: string;
  environment: string;
  status: string;
  trigger: string;
  commit: string | null;
  ref: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
}

export function deploymentRecord(d: DeploymentRow): DeploymentRecord {
  return {
    id: d.id,
    projectId: d.projectId,
    environment: d.environment,
    status: d.status,
    trigger: d.trigger,
    commit: d.commit,
    ref: d.ref,
    createdAt: d.createdAt,
    startedAt: d.startedAt,
    finishedAt: d.finishedAt,
    error: d.error,
  };
}

/** The URL the edge serves the project at: its primary domain, on the edge port (omitted when 80). */
export function projectUrl(ctx: AppContext, host: string): string {
  const p = ctx.config.edgePort;
  return `http://${host}${p && p !== 80 ? `:${p}` : ''}`;
}

export async function info(ctx: AppContext, row: ProjectRow) {
  const record = projectRecord(ctx, row, await store.listDomains(ctx.db, row.orgId, row.id));
  const last = await store.latestDeployment(ctx.db, row.orgId, row.id);
  const rt = getRuntimePort();
  let runtime: { state: string; url: string; port: number; pid?: number; startedAt?: string } | null = null;
  if (rt) {
    try {
      runtime = await rt.state(ctx, row.orgId, row.id);
    } catch (e) {
      ctx.log.warn({ err: e, projectId: row.id }, 'runtime state failed');
    }
  }
  if (!runtime) {
    const everReady = await store.latestDeployment(ctx.db, row.orgId, row.id, { status: 'ready' });
    runtime = { state: everReady ? 'stopped' : 'not_deployed', url: projectUrl(ctx, record.routes.primaryDomain), port: row.port };
  }
  return {
    runtime,
    build: { lastDeploymentId: last?.id ?? null, status: last?.status ?? null, commit: last?.commit ?? null },
    source: record.source,
    // Whether this instance is linked to a cloud instance and the link answers (cloud area).
    cloud: await linkStatus(ctx),
  };
}

export async function listDeployments(ctx: AppContext, row: ProjectRow, q: { limit?: number; environment?: string; status?: string }): Promise<DeploymentRecord[]> {
  const rows = await store.listDeployments(ctx.db, row.orgId, row.id, { limit: q.limit ?? 50, environment: q.environment, status: q.status });
  return rows.map(deploymentRecord);
}

// ---------------------------------------------------------------- deletion

export interface CountNames {
  count: number;
  names: string[];
}

export interface DeletionPreview {
  deployments: CountNames;
  envVars: CountNames;
  domains: CountNames;
  environments: CountNames;
  backupPolicies: CountNames;
  backupRuns: CountNames;
  services: CountNames;
  [other: string]: CountNames;
}

const cn = (names: string[]): CountNames => ({ count: names.length, names });

export async function deletionPreview(ctx: AppContext, row: ProjectRow, db: Db = ctx.db): Promise<DeletionPreview> {
  const { orgId, id } = row;
  const out: DeletionPreview = {
    deployments: cn(await store.namesUnder(db, 'deployments', orgId, id)),
    envVars: cn(await store.envVarNames(db, orgId, id)),
    domains: cn(await store.namesUnder(db, 'domains', orgId, id)),
    environments: cn(await store.namesUnder(db, 'environments', orgId, id)),
    backupPolicies: cn([]),
    backupRuns: cn([]),
    services: cn(await store.namesUnder(db, 'services', orgId, id)),
    routeRules: cn(await store.namesUnder(db, 'routeRules', orgId, id)),
  };
  for (const d of projectDependents()) out[d.name] = await d.preview(db, orgId, id);
  return out;
}

/** Folders of a project under the data dir: its volumes, uploads and builds. */
export function projectPaths(ctx: AppContext, projectId: string): string[] {
  const safe = path.basename(projectId);
  return ['volumes', 'uploads', 'builds'].map((d) => path.join(ctx.config.dataDir, d, safe));
}

/** Deletes the project and everything the preview lists in one transaction, then its files. */
export async function deleteProject(ctx: AppContext, actor: Actor, row: ProjectRow): Promise<{ id: string; deleted: true; removed: DeletionPreview }> {
  const rt = getRuntimePort();
  if (rt) await afterCommit(ctx, 'project.delete', () => rt.removeProject(ctx, row.orgId, row.id));
  const paths = [...projectPaths(ctx, row.id)];
  for (const d of projectDependents()) paths.push(...(d.paths?.(ctx, row.orgId, row.id) ?? []));
  const removed = await transaction(ctx.db, async (tx) => {
    const preview = await deletionPreview(ctx, row, tx);
    for (const d of projectDependents()) await d.remove(tx, row.orgId, row.id);
    await store.deleteProjectRows(tx, row.orgId, row.id);
    await insertAuditEvent(tx, {
      orgId: row.orgId,
      actorId: actor.userId,
      action: 'project.delete',
      resourceType: 'project',
      resourceId: row.id,
      details: { name: row.name, slug: row.slug, counts: Object.fromEntries(Object.entries(preview).map(([k, v]) => [k, v.count])) },
    });
    return preview;
  });
  invalidateAuthCache();
  for (const p of paths) {
    await rm(p, { recursive: true, force: true }).catch((e) => ctx.log.warn({ err: e, path: p }, 'could not remove project files'));
  }
  return { id: row.id, deleted: true, removed };
}

