/**
 * The variables a project's app and builds get for its managed services (contract section 19):
 * `DATABASE_URL` for the first SQL database (oldest postgres or mysql), `REDIS_URL`, `MONGODB_URL`,
 * `<NAME>_URL` for each by its name, and `PGHOST`-style parts for the PostgreSQL that is DATABASE_URL.
 * Every value holding a password is also listed in `secrets` (redacted from build output and logs).
 */
import type { AppContext } from '../../context.js';
import { connectionUrl, openCredentials, type Credentials } from './credentials.js';
import type { ServiceKind } from './kinds.js';
import { previewInstances, PRODUCTION } from './previews.js';
import * as store from './services.store.js';

export interface WiredService {
  kind: ServiceKind;
  name: string;
  host: string;
  port: number;
  credentials: Credentials;
}

/** `<NAME>_URL`: the name upper-cased, `-` as `_` (`main-db` -> `MAIN_DB_URL`). */
export function urlVariableOf(name: string): string {
  return `${name.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}_URL`;
}

/** The variables for `services`, oldest first; a name's own variable never overrides the shared ones. */
export function serviceVariables(services: WiredService[]): { env: Record<string, string>; secrets: string[] } {
  const env: Record<string, string> = {};
  const secrets: string[] = [];
  const shared: Record<string, string> = {};
  for (const s of services) {
    const url = connectionUrl(s.kind, s.credentials, s.host, s.port);
    env[urlVariableOf(s.name)] = url;
    secrets.push(url, s.credentials.password);
    if ((s.kind === 'postgres' || s.kind === 'mysql') && !shared.DATABASE_URL) {
      shared.DATABASE_URL = url;
      if (s.kind === 'postgres') {
        Object.assign(shared, { PGHOST: s.host, PGPORT: String(s.port), PGUSER: s.credentials.username, PGPASSWORD: s.credentials.password, PGDATABASE: s.credentials.database });
      }
    }
    if (s.kind === 'redis') shared.REDIS_URL ??= url;
    if (s.kind === 'mongodb') shared.MONGODB_URL ??= url;
  }
  return { env: { ...env, ...shared }, secrets: [...new Set(secrets)] };
}

/** How long an app's or a build's start waits for a service of its project that is starting (the server's own start: both at once). */
const WAIT_FOR_START_MS = 60_000;

/**
 * The variables of a project's managed services on this server, for its app and builds in
 * `environment`: production's services, or a preview's own instances (made on its first call,
 * previews.ts). A service that should run and is starting is waited for (up to a minute), one that
 * is stopped or failed is left out.
 */
export async function managedServiceEnv(ctx: AppContext, orgId: string, projectId: string, environment = PRODUCTION): Promise<{ env: Record<string, string>; secrets: string[] }> {
  const production = (await store.listManaged(ctx.db, orgId, projectId)).filter((r) => r.desired === 'running');
  if (production.length === 0 && environment === PRODUCTION) return { env: {}, secrets: [] };
  const deadline = Date.now() + WAIT_FOR_START_MS;
  // The server's own start: the services area starts its runner just after the hosting area's apps begin.
  while (!ctx.state.services.runner && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const runner = ctx.state.services.runner;
  if (!runner) return { env: {}, secrets: [] };
  const rows = environment === PRODUCTION ? production : await previewInstances(ctx, orgId, projectId, environment);
  // A preview's instance just made (a seed loaded) gets its own minute to answer.
  const until = environment === PRODUCTION ? deadline : Date.now() + WAIT_FOR_START_MS;
  const addrs = await Promise.all(rows.map((r) => runner.address(r.id) ?? runner.whenRunning(r.id, Math.max(0, until - Date.now()))));
  const wired: WiredService[] = [];
  rows.forEach((r, i) => {
    const addr = addrs[i];
    if (addr) wired.push({ kind: r.kind as ServiceKind, name: r.name, host: addr.host, port: addr.port, credentials: openCredentials(ctx.keyring, r.id, r.credentials) });
  });
  return serviceVariables(wired);
}
