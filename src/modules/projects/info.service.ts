/** Read views of a project's runtime and builds: info (runtime, last build, source) and its deployments. */
import type { AppContext } from '../../context.js';
import { deploymentRecord, projectRecord, type DeploymentRecord, type InfoRecord } from './projects.presenters.js';
import * as store from './projects.store.js';
import type { ProjectRow } from './projects.store.js';
import type { RuntimeState } from './runtime-port.js';

/** The URL the edge serves the project at: its primary domain, on the edge port (omitted when 80). */
export function projectUrl(ctx: AppContext, host: string): string {
  const p = ctx.config.edgePort;
  return `http://${host}${p && p !== 80 ? `:${p}` : ''}`;
}

export async function info(ctx: AppContext, row: ProjectRow): Promise<InfoRecord> {
  const record = projectRecord(ctx, row, await store.listDomains(ctx.db, row.orgId, row.id));
  const last = await store.latestDeployment(ctx.db, row.orgId, row.id);
  const rt = ctx.ports.runtime;
  let runtime: RuntimeState | null = null;
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
    cloud: ctx.ports.cloud ? await ctx.ports.cloud.status() : { linked: false, reachable: false },
  };
}

export async function listDeployments(ctx: AppContext, row: ProjectRow, q: { limit?: number; environment?: string; status?: string }): Promise<DeploymentRecord[]> {
  const rows = await store.listDeployments(ctx.db, row.orgId, row.id, { limit: q.limit ?? 50, environment: q.environment, status: q.status });
  return rows.map(deploymentRecord);
}
