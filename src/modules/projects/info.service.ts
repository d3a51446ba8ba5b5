/** Read view of a project's runtime and builds: info (runtime, last build, source). */
import type { AppContext } from '../../context.js';
import { projectRecord, type InfoRecord } from './projects.presenters.js';
import * as store from './domains.store.js';
import type { ProjectRow } from './projects.store.js';
import type { RuntimeState } from './runtime-port.js';

/** The URL the edge serves the project at: its primary domain, on the edge port (omitted when 80). */
export function projectUrl(ctx: AppContext, host: string): string {
  const p = ctx.config.edgePort;
  return `http://${host}${p && p !== 80 ? `:${p}` : ''}`;
}

export async function info(ctx: AppContext, row: ProjectRow): Promise<InfoRecord> {
  const record = projectRecord(ctx, row, await store.listDomains(ctx.db, row.orgId, row.id));
  const history = ctx.ports.deploymentHistory;
  const last = await history?.latest(ctx.db, row.orgId, row.id);
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
    const everReady = await history?.latest(ctx.db, row.orgId, row.id, { status: 'ready' });
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
