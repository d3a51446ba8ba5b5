/**
 * Managed services in a project's transfer to and from the cloud (docs/services.md "Transfers"): their
 * definitions (name, kind, version, resources, seedFrom, stopped) travel in the bundle; credentials do
 * not (docs/decisions.md): each side generates its own, and the app's variables are made from them
 * at each build and start. With `includeData` a native dump of each travels beside the bundle and is
 * loaded into the new instance the way a restore does (restore.ts).
 */
import { rm } from 'node:fs/promises';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../lib/errors.js';
import { newId, nowIso } from '../../lib/ids.js';
import { generateCredentials, sealCredentials } from './credentials.js';
import { chooseVersion, type ServiceKind } from './kinds.js';
import { PRODUCTION } from './previews.js';
import * as store from './services.store.js';
import type { ManagedServiceRow } from './services.store.js';

/** What a transfer carries of a managed service: never its credentials or data. */
export interface ServiceDefinition {
  name: string;
  kind: ServiceKind;
  version: string;
  resources: { cpuCores: number; memoryMb: number; diskMb: number };
  seedFrom: 'production' | null;
  /** The owner stopped it (`PATCH stopped: true`): it is made, not started, on the other side. */
  stopped: boolean;
  /** Kept on the other side: which service is the oldest decides the shared variables (`DATABASE_URL`, ...). */
  createdAt: string;
}

/** The definitions of the project's production managed services, oldest first (previews' instances are throwaway: not carried). */
export async function serviceDefinitions(db: Db, orgId: string, projectId: string): Promise<ServiceDefinition[]> {
  return (await store.listManaged(db, orgId, projectId)).map((r) => ({
    name: r.name,
    kind: r.kind as ServiceKind,
    version: r.version,
    resources: { cpuCores: Number(r.cpuCores), memoryMb: r.memoryMb, diskMb: r.diskMb },
    seedFrom: r.seedFrom === PRODUCTION ? 'production' : null,
    stopped: r.desired === 'stopped',
    createdAt: r.createdAt,
  }));
}

/** Definitions checked against what this server's runtime offers, with the port each kind listens on here. */
export interface PlannedServices {
  defs: Array<ServiceDefinition & { port: number }>;
}

/**
 * Checks that this server's runtime can run every definition (kind and version offered): a 400
 * naming `managedServices.<i>.kind|version` otherwise, before anything is written.
 */
export async function planServices(ctx: AppContext, defs: ServiceDefinition[]): Promise<PlannedServices> {
  const planned: PlannedServices['defs'] = [];
  for (const [i, d] of defs.entries()) {
    try {
      const offer = await chooseVersion(ctx.state.services, ctx.config.docker.baseImages, ctx.config.runtime, d.kind, d.version);
      planned.push({ ...d, port: offer.port });
    } catch (e) {
      if (e instanceof AppError && e.field) throw new AppError(e.code, `managedServices.${i}: ${e.message}`, { field: `managedServices.${i}.${e.field}` });
      throw e;
    }
  }
  return { defs: planned };
}

/** The rows a transfer wrote and the ones it replaced: `startServices` acts on them once the transaction committed. */
export interface WrittenServices {
  added: ManagedServiceRow[];
  removed: ManagedServiceRow[];
}

/** The rows of the planned services for the project (not stored yet), each with new generated credentials. */
export function newServiceRows(ctx: AppContext, orgId: string, projectId: string, plan: PlannedServices): ManagedServiceRow[] {
  const at = nowIso();
  return plan.defs.map((d) => {
    const id = newId('svc');
    return {
      id,
      orgId,
      projectId,
      kind: d.kind,
      name: d.name,
      version: d.version,
      runtime: ctx.config.runtime,
      desired: d.stopped ? 'stopped' : 'running',
      status: d.stopped ? 'stopped' : 'starting',
      cpuCores: d.resources.cpuCores,
      memoryMb: d.resources.memoryMb,
      diskMb: d.resources.diskMb,
      port: d.port,
      credentials: sealCredentials(ctx.keyring, id, generateCredentials(d.kind, d.name)),
      lastError: null,
      environment: PRODUCTION,
      sourceId: null,
      seedFrom: d.seedFrom,
      address: null,
      createdAt: d.createdAt,
      updatedAt: at,
    };
  });
}

/**
 * Stores `rows` as the project's managed services; with `replace` the project's managed services
 * (previews' instances included) are deleted first. Call inside the transaction that writes the
 * rest of the bundle.
 */
export async function writeServices(tx: Db, orgId: string, projectId: string, rows: ManagedServiceRow[], replace: boolean): Promise<WrittenServices> {
  const removed = replace ? await store.listProjectManaged(tx, orgId, projectId) : [];
  if (replace) await store.deleteProjectManaged(tx, orgId, projectId);
  for (const row of rows) await store.insertManaged(tx, row);
  return { added: rows, removed };
}

/** After the transaction: the replaced services stop and go with their data; the new ones that should run start. */
export async function startServices(ctx: AppContext, w: WrittenServices): Promise<void> {
  const runner = ctx.state.services.runner;
  if (!runner) return;
  for (const r of w.removed) {
    await runner.stop(r.id);
    runner.forget(r.id);
    await rm(runner.volumeDir(r), { recursive: true, force: true }).catch((e) => ctx.log.warn({ err: e, serviceId: r.id }, 'could not remove the data of a replaced service'));
  }
  for (const r of w.added) if (r.desired === 'running') runner.ensure(r);
}

/**
 * The project moved to the cloud: its managed services here stop and stay stopped (their rows and
 * data are kept, unserved, like the project's other local rows, until it comes back and they are replaced).
 */
export async function parkServices(ctx: AppContext, orgId: string, projectId: string): Promise<void> {
  const rows = await store.listProjectManaged(ctx.db, orgId, projectId);
  const runner = ctx.state.services.runner;
  for (const r of rows) {
    await runner?.stop(r.id);
    await store.updateManaged(ctx.db, orgId, r.id, { desired: 'stopped', status: 'stopped', updatedAt: nowIso() });
  }
}
