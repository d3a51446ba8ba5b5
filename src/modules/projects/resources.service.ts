import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { transaction } from '../../db/client.js';
import { invalid } from '../../lib/errors.js';
import { nowIso } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { DEFAULT_RESOURCES } from './project-input.js';
import * as store from './projects.store.js';
import type { ProjectRow } from './projects.store.js';

export interface Limits {
  cpuCores: number;
  memoryMb: number;
  diskMb: number;
}

/** Production's limits add the Swarm service's replicas. */
export interface ProductionLimits extends Limits {
  replicas: number;
}

export type SleepMode = 'auto_sleep' | 'always_on';

export interface ResourcesRecord {
  production: ProductionLimits;
  build: Limits;
  sleepMode: SleepMode;
  port: number;
}

export interface ResourcesPatch {
  production?: Partial<ProductionLimits>;
  build?: Partial<Limits>;
  sleepMode?: SleepMode;
  port?: number;
}

function stored(row: ProjectRow): { production: ProductionLimits; build: Limits } {
  let parsed: Partial<{ production: Partial<ProductionLimits>; build: Partial<Limits> }> = {};
  try {
    parsed = JSON.parse(row.resources);
  } catch {
    /* defaults below */
  }
  return {
    production: { ...DEFAULT_RESOURCES.production, ...parsed.production },
    build: { ...DEFAULT_RESOURCES.build, ...parsed.build },
  };
}

export function resourcesOf(row: ProjectRow): ResourcesRecord {
  return { ...stored(row), sleepMode: row.sleepMode as SleepMode, port: row.port };
}

/** Contract section 5's ranges, checked again here so that every caller (not only HTTP) gets them. */
function checkLimits(l: Partial<ProductionLimits>, prefix: string): void {
  if (l.replicas !== undefined && !(prefix === 'production' && Number.isInteger(l.replicas) && l.replicas >= 1 && l.replicas <= 20)) {
    throw invalid(`${prefix}.replicas`, prefix === 'production' ? 'production.replicas must be a whole number from 1 to 20' : `${prefix}.replicas is not a setting: only production has replicas`);
  }
  if (l.cpuCores !== undefined && !(Number.isFinite(l.cpuCores) && l.cpuCores > 0 && l.cpuCores <= 4)) {
    throw invalid(`${prefix}.cpuCores`, `${prefix}.cpuCores must be greater than 0 and at most 4`);
  }
  if (l.memoryMb !== undefined && !(Number.isInteger(l.memoryMb) && l.memoryMb >= 64 && l.memoryMb <= 65536)) {
    throw invalid(`${prefix}.memoryMb`, `${prefix}.memoryMb must be a whole number from 64 to 65536`);
  }
  if (l.diskMb !== undefined && !(Number.isInteger(l.diskMb) && l.diskMb >= 128)) {
    throw invalid(`${prefix}.diskMb`, `${prefix}.diskMb must be a whole number of at least 128`);
  }
}

export async function updateResources(ctx: AppContext, actor: Actor, row: ProjectRow, patch: ResourcesPatch): Promise<ResourcesRecord> {
  if (patch.production) checkLimits(patch.production, 'production');
  if (patch.build) checkLimits(patch.build, 'build');
  if (patch.port !== undefined && !(Number.isInteger(patch.port) && patch.port >= 1 && patch.port <= 65535)) {
    throw invalid('port', 'port must be a whole number from 1 to 65535');
  }
  if (patch.sleepMode !== undefined && patch.sleepMode !== 'auto_sleep' && patch.sleepMode !== 'always_on') {
    throw invalid('sleepMode', 'sleepMode must be auto_sleep or always_on');
  }
  const cur = stored(row);
  const next = {
    production: { ...cur.production, ...stripUndefined(patch.production) },
    build: { ...cur.build, ...stripUndefined(patch.build) },
  };
  const sleepMode = patch.sleepMode ?? (row.sleepMode as SleepMode);
  const port = patch.port ?? row.port;
  await transaction(ctx.db, async (tx) => {
    await store.updateProject(tx, row.orgId, row.id, { resources: JSON.stringify(next), sleepMode, port, updatedAt: nowIso() });
    await insertAuditEvent(tx, {
      orgId: row.orgId,
      actorId: actor.userId,
      action: 'project.resources.update',
      resourceType: 'project',
      resourceId: row.id,
      details: { fields: Object.keys(patch).filter((k) => (patch as Record<string, unknown>)[k] !== undefined) },
    });
  });
  return { ...next, sleepMode, port };
}

function stripUndefined<T extends object>(o: T | undefined): Partial<T> {
  if (!o) return {};
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export async function setSleepMode(ctx: AppContext, actor: Actor, row: ProjectRow, sleepMode: SleepMode): Promise<ResourcesRecord> {
  return updateResources(ctx, actor, row, { sleepMode });
}
