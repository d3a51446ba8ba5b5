import type { AppContext } from '../../context.js';
import type { RequestEntry } from '../../edge/requests.js';
import { invalid } from '../../lib/errors.js';
import { appKeyOf } from '../../runtime/app-key.js';
import { projectQueries, type ProjectRow } from '../projects/index.js';
import { hostOf } from './host.js';

/**
 * `?environment=*` on the request log: every environment of the project at once, production's app and
 * each preview's, every entry naming its `environment` (no environment can be named `*`: names are
 * lowercase letters, digits and dashes).
 */
export const EVERY_ENVIRONMENT = '*';

/** One app a log read covers, and the environment it serves. */
export interface EnvironmentApp {
  app: string;
  environment: string;
}

/** A request-log entry of an `environment=*` read: the entry and the environment whose app served it. */
export type EnvironmentRequestEntry = RequestEntry & { environment?: string };

/** The key of the app whose logs a request names (`?environment=`): production's (the project's id) or a preview's; 400 for an unknown one. */
export async function appOfEnvironment(ctx: AppContext, project: ProjectRow, environment: string | undefined): Promise<string> {
  if (!environment || environment === 'production') return project.id;
  const env = await projectQueries.findEnvironment(ctx.db, project.orgId, project.id, environment);
  if (!env) throw invalid('environment', `this project has no environment named "${environment}"`);
  return appKeyOf(project.id, env.name);
}

/** The apps a request-log read names: one environment's, or with `*` production's and every preview's (oldest first). */
export async function appsOfEnvironment(ctx: AppContext, project: ProjectRow, environment: string | undefined): Promise<EnvironmentApp[]> {
  if (environment !== EVERY_ENVIRONMENT) return [{ app: await appOfEnvironment(ctx, project, environment), environment: environment || 'production' }];
  // The project's environments include production's own row: its app is the project's id.
  const previews = (await projectQueries.listEnvironments(ctx.db, project.orgId, project.id)).filter((e) => e.type !== 'production');
  return [{ app: project.id, environment: 'production' }, ...previews.map((e) => ({ app: appKeyOf(project.id, e.name), environment: e.name }))];
}

const byTime = (x: RequestEntry, y: RequestEntry) => (x.ts < y.ts ? -1 : x.ts > y.ts ? 1 : 0);

/**
 * `server-logs/recent`: the `limit` newest requests the edge served for the named environment (every
 * environment with `*`, each entry naming its own), oldest first. Entries live in the memory of the
 * instance that runs an app: another instance's are asked of it (log-relay.ts).
 */
export async function readRecentRequests(ctx: AppContext, project: ProjectRow, environment: string | undefined, limit: number): Promise<EnvironmentRequestEntry[]> {
  const apps = await appsOfEnvironment(ctx, project, environment);
  const every = environment === EVERY_ENVIRONMENT;
  const rt = hostOf(ctx);
  await rt.edgeRecorded();
  const lists = await Promise.all(
    apps.map(async ({ app, environment: name }) => {
      const owner = rt.owners.heldElsewhere(app) ? rt.owners.ownerOf(app)?.instanceId : undefined;
      const entries = await rt.logRelay.recentRequests(app, limit, owner);
      return every ? entries.map((e) => ({ ...e, environment: name })) : entries;
    }),
  );
  if (lists.length === 1) return lists[0]!;
  return lists.flat().sort(byTime).slice(-limit);
}

/**
 * `server-logs/stream`: follows the requests of `apps` (from `appsOfEnvironment`), served by any
 * instance's edge; with `every` each entry names its environment. An environment made after the
 * stream opened is not in it (the dashboard opens a new stream each minute). Answers the function
 * that stops following.
 */
export function followRequests(ctx: AppContext, apps: EnvironmentApp[], every: boolean, fn: (e: EnvironmentRequestEntry) => void): () => void {
  const relay = hostOf(ctx).logRelay;
  const offs = apps.map(({ app, environment }) => relay.followRequests(app, every ? (e) => fn({ ...e, environment }) : fn));
  return () => {
    for (const off of offs) off();
  };
}
