/**
 * A project's lifecycle settings: build/deploy options, enable/disable (the runtime brings it online
 * or takes it offline) and re-syncing its free domain's edge route.
 */
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { createRequire } from 'node:module';
import type SemverModule from 'semver';
import { invalid } from '../../lib/errors.js';
import { matchNodeVersion, offeredNodeVersions } from '../../runtime/toolchains.js';
import { newId, nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { changedFields, emptyToNull, mergeInput } from './project-input.js';
import { freeDomainOf, type OptionsRecord, type ProjectRecord, type RoutingAttemptRecord } from './projects.presenters.js';
import { loadRecord } from './projects.service.js';
import * as store from './projects.store.js';
import type { ProjectRow } from './projects.store.js';
import { afterCommit } from './runtime-port.js';

/** semver, loaded on first use, not at start (docs/decisions.md, "Memory and authenticated reads again"). */
const requireCjs = createRequire(import.meta.url);
const semverLib = (): typeof SemverModule => requireCjs('semver') as typeof SemverModule;

export interface OptionsInput {
  installCommand?: string | null;
  buildCommand?: string | null;
  startCommand?: string | null;
  outputDirectory?: string | null;
  rootDirectory?: string | null;
  nodeVersion?: string | null;
}

/** A version (`20`, `20.11.1`, `v20`), a range (`>=18 <21`, `^20`, `20.x`) or an LTS name (`lts`, `lts/iron`). */
const isNodeVersion = (v: string): boolean => /^lts(?:\/(?:\*|[a-z]+))?$/i.test(v) || (/^[\dvx^~<>=.|* -]+$/i.test(v) && semverLib().validRange(v, { loose: true }) !== null);

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
    if (nv !== null && !isNodeVersion(nv.trim())) {
      throw invalid('nodeVersion', 'nodeVersion must be a Node.js version or range such as 20, 20.11.1, >=20 or lts');
    }
    // Honoured or refused, never ignored: the host runs builds and apps on the Node.js it offers.
    if (nv !== null && !matchNodeVersion(nv)) {
      throw invalid('nodeVersion', `nodeVersion ${nv.trim()} is not offered by this host: it offers Node.js ${offeredNodeVersions().join(', ')}`);
    }
    nodeVersion = nv === null ? null : nv.trim();
  }
  const options: OptionsRecord = {
    installCommand: merged.installCommand,
    buildCommand: merged.buildCommand,
    startCommand: merged.startCommand,
    outputDirectory: merged.outputDirectory,
    rootDirectory: merged.rootDirectory,
    nodeVersion,
  };
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, { ...options, updatedAt: nowIso() });
    await insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action: 'project.options', resourceType: 'project', resourceId: row.id, details: { fields: changedFields(input) } });
  });
  return options;
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
  const rt = ctx.ports.runtime;
  if (rt) {
    await afterCommit(ctx, `project.${status}`, () => (status === 'enabled' ? rt.bringOnline(ctx, row.orgId, row.id) : rt.takeOffline(ctx, row.orgId, row.id)));
  }
  return loadRecord(ctx, ctx.db, row.orgId, row.id);
}

/** Records a routing sync attempt of the free domain and asks the runtime (when there is one) to re-sync it. */
export async function retryRouting(ctx: AppContext, actor: Actor, row: ProjectRow): Promise<RoutingAttemptRecord> {
  const domain = freeDomainOf(ctx, row.slug);
  const rt = ctx.ports.runtime;
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
