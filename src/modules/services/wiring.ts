/**
 * The variables a project's app and builds get for its managed services (contract section 19):
 * `DATABASE_URL` for the first SQL database (oldest postgres or mysql), `REDIS_URL`, `MONGODB_URL`,
 * `<NAME>_URL` for each by its name, and `PGHOST`-style parts for the PostgreSQL that is DATABASE_URL.
 * Every value holding a password is also listed in `secrets` (redacted from build output and logs).
 */
import type { AppContext } from '../../context.js';
import { connectionUrl, openCredentials, type Credentials } from './credentials.js';
import type { ServiceKind } from './kinds.js';
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

/** The variables of a project's managed services running on this server now (not yet given to apps: see docs/services.md). */
export async function managedServiceEnv(ctx: AppContext, orgId: string, projectId: string): Promise<{ env: Record<string, string>; secrets: string[] }> {
  const runner = ctx.state.services.runner;
  const wired: WiredService[] = [];
  for (const r of await store.listManaged(ctx.db, orgId, projectId)) {
    const addr = runner?.address(r.id);
    if (!addr) continue;
    wired.push({ kind: r.kind as ServiceKind, name: r.name, host: addr.host, port: addr.port, credentials: openCredentials(ctx.keyring, r.id, r.credentials) });
  }
  return serviceVariables(wired);
}
