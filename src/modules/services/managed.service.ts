/**
 * Managed services' use cases (contract section 19): create, read, list, change, stop/start, restart,
 * delete, and the credentials' reveal. Who may call them is the routes' declaration; here are the
 * domain rules. Credentials are generated here, sealed at once, and never returned but by `reveal`.
 */
import { rm } from 'node:fs/promises';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { conflict, invalid, notFound } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { attachedServices, projectQueries, type ProjectRow } from '../projects/index.js';
import { PRODUCTION, removeInstances } from './previews.js';
import { connectionUrl, generateCredentials, openCredentials, sealCredentials } from './credentials.js';
import { chooseVersion, runtimeOffers, type RuntimeOffer, type ServiceKind, type ServiceRuntime } from './kinds.js';
import * as store from './services.store.js';
import type { ManagedServiceRow } from './services.store.js';

export interface ServiceResources {
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
}

export type ServiceStatus = 'starting' | 'running' | 'stopped' | 'failed';

/** The record of contract section 19; attached databases and the data volume have `managed: false` and nulls. */
export interface ServiceRecord {
  id: string;
  kind: 'volume' | ServiceKind;
  name: string;
  version: string | null;
  managed: boolean;
  status: ServiceStatus | null;
  resources: ServiceResources | null;
  internalHost: string | null;
  port: number | null;
  createdAt: string;
  /** Why it failed (managed, `failed` only). */
  error?: string;
  /** Managed: `production`, or the preview environment whose own instance it is. */
  environment?: string;
  /** Managed, production's: what previews' instances start with (null: empty; `production`: its last backup). */
  seedFrom?: SeedFrom;
}

export type SeedFrom = 'production' | null;

export interface CreateInput {
  kind: ServiceKind;
  name: string;
  version?: string;
  connectionUrl?: string;
  resources?: Partial<ServiceResources>;
  seedFrom?: SeedFrom;
}

export interface PatchInput {
  resources?: Partial<ServiceResources>;
  stopped?: boolean;
  seedFrom?: SeedFrom;
}

const NAME_RE = /^[a-z][a-z0-9_-]{0,62}$/;

/** Defaults per kind: Redis needs less memory than the SQL servers. */
function defaults(kind: ServiceKind): ServiceResources {
  return { cpuCores: 0.5, memoryMb: kind === 'redis' ? 128 : 512, diskMb: 1024 };
}

function checkResources(r: Partial<ServiceResources>): void {
  if (r.cpuCores !== undefined && !(Number.isFinite(r.cpuCores) && r.cpuCores >= 0.1 && r.cpuCores <= 4)) throw invalid('resources.cpuCores', 'resources.cpuCores must be from 0.1 to 4');
  if (r.memoryMb !== undefined && !(Number.isInteger(r.memoryMb) && r.memoryMb >= 64 && r.memoryMb <= 16384)) throw invalid('resources.memoryMb', 'resources.memoryMb must be a whole number from 64 to 16384');
  if (r.diskMb !== undefined && !(Number.isInteger(r.diskMb) && r.diskMb >= 128 && r.diskMb <= 1048576)) throw invalid('resources.diskMb', 'resources.diskMb must be a whole number from 128 to 1048576');
}

export function runtimeOf(ctx: AppContext): ServiceRuntime {
  return ctx.config.runtime;
}

export function managedRecord(ctx: AppContext, r: ManagedServiceRow): ServiceRecord {
  const addr = ctx.state.services.runner?.address(r.id) ?? null;
  return {
    id: r.id,
    kind: r.kind as ServiceKind,
    name: r.name,
    version: r.version,
    managed: true,
    status: r.status as ServiceStatus,
    resources: { cpuCores: Number(r.cpuCores), memoryMb: r.memoryMb, diskMb: r.diskMb },
    internalHost: addr?.host ?? null,
    port: r.port,
    createdAt: r.createdAt,
    ...(r.status === 'failed' && r.lastError ? { error: r.lastError } : {}),
    environment: r.environment,
    ...(r.environment === PRODUCTION ? { seedFrom: (r.seedFrom as SeedFrom) ?? null } : {}),
  };
}

export async function serviceKinds(ctx: AppContext): Promise<{ runtime: ServiceRuntime; runtimes: RuntimeOffer[] }> {
  return { runtime: runtimeOf(ctx), runtimes: await runtimeOffers(ctx.state.services, ctx.config.docker.baseImages) };
}

/** The data volume, attached databases and managed services of a project, oldest first; a preview's own instances with `environment`. */
export async function listServices(ctx: AppContext, project: ProjectRow, environment = PRODUCTION): Promise<ServiceRecord[]> {
  if (environment !== PRODUCTION) {
    if (!(await projectQueries.findEnvironment(ctx.db, project.orgId, project.id, environment))) throw notFound('environment');
    return (await store.listManaged(ctx.db, project.orgId, project.id, environment)).map((r) => managedRecord(ctx, r));
  }
  const attached = (await attachedServices.list(ctx, project)).map(
    (s): ServiceRecord => ({ id: s.id, kind: s.kind, name: s.name, version: null, managed: false, status: null, resources: null, internalHost: null, port: null, createdAt: s.createdAt }),
  );
  const managed = (await store.listManaged(ctx.db, project.orgId, project.id)).map((r) => managedRecord(ctx, r));
  return [...attached, ...managed].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name));
}

export async function findManagedOr404(ctx: AppContext, project: ProjectRow, serviceId: string): Promise<ManagedServiceRow> {
  const row = await store.findManaged(ctx.db, project.orgId, project.id, serviceId);
  if (!row) throw notFound('service');
  return row;
}

export async function getService(ctx: AppContext, project: ProjectRow, serviceId: string): Promise<ServiceRecord> {
  const row = await store.findManaged(ctx.db, project.orgId, project.id, serviceId);
  if (row) return managedRecord(ctx, row);
  const attached = (await attachedServices.list(ctx, project)).find((s) => s.id === serviceId);
  if (!attached) throw notFound('service');
  return { id: attached.id, kind: attached.kind, name: attached.name, version: null, managed: false, status: null, resources: null, internalHost: null, port: null, createdAt: attached.createdAt };
}

/** POST /api/projects/:id/services: `connectionUrl` attaches an outside PostgreSQL (as before); otherwise a managed service is made and started. */
export async function createService(ctx: AppContext, actor: Actor, project: ProjectRow, input: CreateInput): Promise<ServiceRecord> {
  if (input.connectionUrl !== undefined) {
    if (input.kind !== 'postgres') throw invalid('kind', 'kind: connectionUrl attaches an outside PostgreSQL database only (kind "postgres")');
    if (input.version !== undefined || input.resources !== undefined) throw invalid(input.version !== undefined ? 'version' : 'resources', 'an attached database (connectionUrl) has no version or resources: Berth does not run it');
    if (input.seedFrom !== undefined) throw invalid('seedFrom', 'an attached database (connectionUrl) has no preview instances to seed: Berth does not run it');
    const s = await attachedServices.attach(ctx, actor, project, { kind: 'postgres', name: input.name, connectionUrl: input.connectionUrl });
    return { ...s, kind: 'postgres', version: null, managed: false, status: null, resources: null, internalHost: null, port: null };
  }
  const name = input.name.trim();
  if (!NAME_RE.test(name)) throw invalid('name', 'name must start with a lowercase letter and hold lowercase letters, digits, "_" and "-" (at most 63 characters)');
  const runtime = runtimeOf(ctx);
  const offer = await chooseVersion(ctx.state.services, ctx.config.docker.baseImages, runtime, input.kind, input.version);
  checkResources(input.resources ?? {});
  if ((await attachedServices.list(ctx, project)).some((s) => s.name === name)) throw conflict(`this project already has a service named "${name}"`, 'name');
  const id = newId('svc');
  const at = nowIso();
  const res = { ...defaults(input.kind), ...input.resources };
  const row: ManagedServiceRow = {
    id,
    orgId: project.orgId,
    projectId: project.id,
    kind: input.kind,
    name,
    version: offer.version,
    runtime,
    desired: 'running',
    status: 'starting',
    cpuCores: res.cpuCores,
    memoryMb: res.memoryMb,
    diskMb: res.diskMb,
    port: offer.port,
    credentials: sealCredentials(ctx.keyring, id, generateCredentials(input.kind, name)),
    lastError: null,
    environment: PRODUCTION,
    sourceId: null,
    seedFrom: input.seedFrom ?? null,
    address: null,
    createdAt: at,
    updatedAt: at,
  };
  try {
    await transaction(ctx.db, async (tx) => {
      await store.insertManaged(tx, row);
      await insertAuditEvent(tx, { orgId: project.orgId, actorId: actor.userId, action: 'project.service.create', resourceType: 'project', resourceId: project.id, details: { serviceId: id, kind: row.kind, name, version: row.version, managed: true } });
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(`this project already has a service named "${name}"`, 'name');
    throw e;
  }
  ctx.state.services.runner?.ensure(row);
  return managedRecord(ctx, row);
}

/** PATCH: new resources (a running service restarts to take them), or `stopped: true|false`. */
export async function updateService(ctx: AppContext, actor: Actor, project: ProjectRow, serviceId: string, patch: PatchInput): Promise<ServiceRecord> {
  const row = await findManagedOr404(ctx, project, serviceId);
  checkResources(patch.resources ?? {});
  const res = { cpuCores: Number(row.cpuCores), memoryMb: row.memoryMb, diskMb: row.diskMb, ...patch.resources };
  if (res.diskMb < row.diskMb) throw invalid('resources.diskMb', `resources.diskMb cannot shrink (it is ${row.diskMb}): back up, then make a new service`);
  const desired = patch.stopped === undefined ? row.desired : patch.stopped ? 'stopped' : 'running';
  const resized = res.cpuCores !== Number(row.cpuCores) || res.memoryMb !== row.memoryMb || res.diskMb !== row.diskMb;
  const status = desired === 'stopped' ? 'stopped' : row.desired === 'stopped' || resized ? 'starting' : row.status;
  if (patch.seedFrom !== undefined && row.environment !== PRODUCTION) throw invalid('seedFrom', "seedFrom is production's service's choice: this is a preview environment's own instance");
  const seedFrom = patch.seedFrom === undefined ? row.seedFrom : patch.seedFrom;
  const next: ManagedServiceRow = { ...row, ...res, desired, status, seedFrom, lastError: status === 'starting' ? null : row.lastError, updatedAt: nowIso() };
  await transaction(ctx.db, async (tx) => {
    await store.updateManaged(tx, row.orgId, row.id, { cpuCores: next.cpuCores, memoryMb: next.memoryMb, diskMb: next.diskMb, desired, status, seedFrom, lastError: next.lastError, updatedAt: next.updatedAt });
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.service.update', resourceType: 'project', resourceId: project.id, details: { serviceId: row.id, ...(patch.resources ? { resources: res } : {}), ...(patch.stopped !== undefined ? { stopped: patch.stopped } : {}), ...(patch.seedFrom !== undefined ? { seedFrom } : {}) } });
  });
  const runner = ctx.state.services.runner;
  if (runner) {
    if (desired === 'stopped') await runner.stop(row.id);
    else if (row.desired === 'running' && resized) await runner.restart(next);
    else runner.ensure(next);
  }
  return managedRecord(ctx, (await store.findManaged(ctx.db, row.orgId, row.projectId, row.id)) ?? next);
}

/** POST .../restart: stops and starts it (a stopped service starts). */
export async function restartService(ctx: AppContext, actor: Actor, project: ProjectRow, serviceId: string): Promise<ServiceRecord> {
  const row = await findManagedOr404(ctx, project, serviceId);
  const next: ManagedServiceRow = { ...row, desired: 'running', status: 'starting', lastError: null, updatedAt: nowIso() };
  await transaction(ctx.db, async (tx) => {
    await store.updateManaged(tx, row.orgId, row.id, { desired: 'running', status: 'starting', lastError: null, updatedAt: next.updatedAt });
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.service.restart', resourceType: 'project', resourceId: project.id, details: { serviceId: row.id } });
  });
  await ctx.state.services.runner?.restart(next);
  return managedRecord(ctx, (await store.findManaged(ctx.db, row.orgId, row.projectId, row.id)) ?? next);
}

/** DELETE: stops it and removes it; its data goes too unless `keepVolume` (then the folder stays for the operator). */
export async function deleteService(ctx: AppContext, actor: Actor, project: ProjectRow, serviceId: string, keepVolume: boolean): Promise<{ id: string; deleted: true; keptVolume: boolean }> {
  const row = await findManagedOr404(ctx, project, serviceId);
  const runner = ctx.state.services.runner;
  await runner?.stop(row.id);
  await transaction(ctx.db, async (tx) => {
    await store.deleteManaged(tx, row.orgId, row.id);
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.service.delete', resourceType: 'project', resourceId: project.id, details: { serviceId: row.id, name: row.name, kind: row.kind, keepVolume } });
  });
  runner?.forget(row.id);
  if (!keepVolume && runner) await rm(runner.volumeDir(row), { recursive: true, force: true }).catch((e) => ctx.log.warn({ err: e, serviceId: row.id }, 'could not remove the service data'));
  // Previews' instances of it go with it (with their data, unless keepVolume).
  if (row.environment === PRODUCTION) await removeInstances(ctx, await store.listInstancesOf(ctx.db, row.orgId, row.projectId, row.id), keepVolume);
  return { id: row.id, deleted: true, keptVolume: keepVolume };
}

/** Project admins only (the route says so): the credentials and the URL the app gets. Audited. */
export async function revealCredentials(ctx: AppContext, actor: Actor, project: ProjectRow, serviceId: string): Promise<{ username: string; password: string; database: string; host: string | null; port: number; url: string | null }> {
  const row = await findManagedOr404(ctx, project, serviceId);
  const c = openCredentials(ctx.keyring, row.id, row.credentials);
  const addr = ctx.state.services.runner?.address(row.id) ?? null;
  await insertAuditEvent(ctx.db, { orgId: row.orgId, actorId: actor.userId, action: 'project.service.credentials_reveal', resourceType: 'project', resourceId: project.id, details: { serviceId: row.id } });
  return { ...c, host: addr?.host ?? null, port: row.port, url: addr ? connectionUrl(row.kind as ServiceKind, c, addr.host, row.port) : null };
}

/** The last `limit` lines the service wrote on this server (the runner keeps 500; passwords redacted). */
export async function serviceLogs(ctx: AppContext, project: ProjectRow, serviceId: string, limit: number): Promise<{ line: string }[]> {
  const row = await findManagedOr404(ctx, project, serviceId);
  return (ctx.state.services.runner?.logs(row.id) ?? []).slice(-limit).map((line) => ({ line }));
}

/** The log's last `limit` lines and a way to follow the lines it writes from now on (GET .../logs/stream). */
export async function serviceLogFeed(ctx: AppContext, project: ProjectRow, serviceId: string, limit: number): Promise<{ backlog: { line: string }[]; subscribe(fn: (e: { line: string }) => void): () => void }> {
  const row = await findManagedOr404(ctx, project, serviceId);
  const runner = ctx.state.services.runner;
  return {
    backlog: (runner?.logs(row.id) ?? []).slice(-limit).map((line) => ({ line })),
    subscribe: (fn) => runner?.follow(row.id, (line) => fn({ line })) ?? (() => {}),
  };
}
