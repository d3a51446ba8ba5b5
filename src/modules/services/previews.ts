/**
 * A preview environment's own instances of the project's managed services (contract section 19,
 * docs/services.md "Preview environments"): made on the preview's first build or start, one per
 * production service that should run, with the same kind, version, name and resources but their own
 * credentials, data folder and address; empty, or seeded from the production service's last
 * succeeded backup when it says `seedFrom: "production"` (the restores' fresh-instance path). They go
 * with the preview (`removeEnvironmentServices`) and with the production service they stand for.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction } from '../../db/client.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { projectQueries } from '../projects/index.js';
import { generateCredentials, sealCredentials } from './credentials.js';
import type { ServiceKind } from './kinds.js';
import { prepareFresh } from './restore.js';
import * as store from './services.store.js';
import type { ManagedServiceRow } from './services.store.js';

export const PRODUCTION = 'production';

/** A new instance of `source` for `environment` (not stored yet). */
function instanceOf(ctx: AppContext, source: ManagedServiceRow, environment: string): ManagedServiceRow {
  const id = newId('svc');
  const at = nowIso();
  return {
    ...source,
    id,
    environment,
    sourceId: source.id,
    seedFrom: null,
    address: null,
    desired: 'running',
    status: 'starting',
    lastError: null,
    credentials: sealCredentials(ctx.keyring, id, generateCredentials(source.kind as ServiceKind, source.name)),
    createdAt: at,
    updatedAt: at,
  };
}

/**
 * Fills the instance's data folder from production's last succeeded backup; answers that run's id,
 * or null when production has none (the instance starts empty).
 */
async function seed(ctx: AppContext, source: ManagedServiceRow, row: ManagedServiceRow, dataDir: string): Promise<string | null> {
  const port = ctx.ports.serviceSeeds;
  if (!port) return null;
  const file = path.join(ctx.config.dataDir, 'tmp', `seed-${row.id}`);
  try {
    const got = await port.lastBackup(ctx, source, file);
    if (!got) return null;
    await prepareFresh(ctx, row, file, dataDir, 'seed');
    return got.runId;
  } finally {
    await rm(file, { force: true }).catch(() => {});
  }
}

/** Makes, stores and starts the instance of `source` for `environment` (a concurrent maker's instance wins). */
async function makeInstance(ctx: AppContext, source: ManagedServiceRow, environment: string): Promise<void> {
  const runner = ctx.state.services.runner;
  if (!runner) return;
  const row = instanceOf(ctx, source, environment);
  const dir = runner.volumeDir(row);
  let seededFrom: string | null = null;
  let seedError: string | null = null;
  if (source.seedFrom === PRODUCTION) {
    try {
      seededFrom = await seed(ctx, source, row, path.join(dir, 'data'));
    } catch (e) {
      seedError = `could not be seeded from production's last backup: ${(e as Error).message}`;
      ctx.log.warn({ serviceId: row.id, sourceId: source.id, err: (e as Error).message }, "a preview's service could not be seeded");
    }
  }
  // Not started on an empty folder when its seed failed: it is `failed`, saying why, until restarted.
  if (seedError) Object.assign(row, { desired: 'stopped', status: 'failed', lastError: seedError });
  // The preview may have been removed meanwhile: nothing is left behind for it then.
  const env = await projectQueries.findEnvironment(ctx.db, row.orgId, row.projectId, environment);
  if (!env) {
    await rm(dir, { recursive: true, force: true });
    return;
  }
  try {
    await transaction(ctx.db, async (tx) => {
      await store.insertManaged(tx, row);
      await insertAuditEvent(tx, {
        orgId: row.orgId,
        actorId: null,
        action: 'project.service.create',
        resourceType: 'project',
        resourceId: row.projectId,
        details: { serviceId: row.id, kind: row.kind, name: row.name, version: row.version, managed: true, environment, sourceId: source.id, seededFrom },
      });
    });
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    if (isUniqueViolation(e)) return;
    throw e;
  }
  if (row.desired === 'running') runner.ensure(row);
}

/**
 * The managed services of a preview environment that should run: the missing instances (one per
 * production service that should run) are made first, seeded ones loaded before this answers. An
 * environment that is not a preview has none.
 */
export async function previewInstances(ctx: AppContext, orgId: string, projectId: string, environment: string): Promise<ManagedServiceRow[]> {
  const env = await projectQueries.findEnvironment(ctx.db, orgId, projectId, environment);
  if (!env || env.type !== 'preview') return [];
  const sources = (await store.listManaged(ctx.db, orgId, projectId)).filter((r) => r.desired === 'running');
  const have = new Set((await store.listManaged(ctx.db, orgId, projectId, environment)).map((r) => r.sourceId));
  const seeding = ctx.state.services.seeding;
  await Promise.all(
    sources
      .filter((s) => !have.has(s.id))
      .map((s) => {
        const key = `${projectId}/${environment}/${s.id}`;
        let made = seeding.get(key);
        if (!made) {
          made = makeInstance(ctx, s, environment)
            .catch((e) => ctx.log.warn({ projectId, environment, sourceId: s.id, err: (e as Error).message }, "could not make a preview's service"))
            .finally(() => seeding.delete(key));
          seeding.set(key, made);
        }
        return made;
      }),
  );
  return (await store.listManaged(ctx.db, orgId, projectId, environment)).filter((r) => r.desired === 'running');
}

/** Stops the instances and removes their rows and data folders (`keepVolume` keeps the folders). */
export async function removeInstances(ctx: AppContext, rows: ManagedServiceRow[], keepVolume = false): Promise<void> {
  const runner = ctx.state.services.runner;
  for (const r of rows) await runner?.stop(r.id);
  for (const r of rows) {
    await store.deleteManaged(ctx.db, r.orgId, r.id);
    runner?.forget(r.id);
    if (!keepVolume && runner) await rm(runner.volumeDir(r), { recursive: true, force: true }).catch((e) => ctx.log.warn({ err: e, serviceId: r.id }, 'could not remove the service data'));
  }
}

/**
 * A preview environment is removed (deployments area): its instances stop and go with their data.
 * Instances being made for it are waited for first. Production's services are never touched here.
 */
export async function removeEnvironmentServices(ctx: AppContext, orgId: string, projectId: string, environment: string): Promise<void> {
  if (environment === PRODUCTION) return;
  const prefix = `${projectId}/${environment}/`;
  await Promise.all([...ctx.state.services.seeding].filter(([k]) => k.startsWith(prefix)).map(([, p]) => p));
  await removeInstances(ctx, await store.listManaged(ctx.db, orgId, projectId, environment));
}
