import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { FastifyInstance } from 'fastify';
import { buildApp, type BuildOptions } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { createLogger } from '../../src/lib/logger.js';
import { HttpClient } from './http.js';

export interface TestServer {
  url: string;
  app: FastifyInstance;
  ctx: AppContext;
  config: Config;
  dataDir: string;
  /** An HTTP client for this server, with a bearer token when given. */
  api(token?: string): HttpClient;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  flags?: Record<string, string>;
  /** Start the jobs worker, the scheduler and module background work (default false). */
  background?: boolean;
  build?: BuildOptions;
  /** The server's log level (default BERTH_TEST_LOG, else silent); pair with `build.logger` to capture it. */
  logLevel?: string;
  /** Fakes replacing ports the modules provide (src/ports.ts), e.g. `{ git: fakeGit }`. */
  ports?: BuildOptions['ports'];
  /** The clock the server reads (`testClock()` from ./clock.ts moves it forward); default the machine's. */
  clock?: BuildOptions['clock'];
  /** Reuse an existing data dir (and database) instead of making fresh ones. */
  dataDir?: string;
  databaseUrl?: string;
}

export const usingPostgres = (): boolean => !!process.env.DATABASE_URL;

/** A fresh PostgreSQL database on the server of DATABASE_URL; dropped by the returned function. */
export async function freshPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const base = new URL(process.env.DATABASE_URL!);
  const name = `berth_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base.toString() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(base.toString());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: base.toString() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export function tempDir(prefix = 'berth-test-'): string {
  return mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Starts a real Berth server on 127.0.0.1 and a free port, on a fresh SQLite file (or a fresh
 * PostgreSQL database when DATABASE_URL is set).
 */
export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const ownDir = !opts.dataDir;
  const dataDir = opts.dataDir ?? tempDir();
  let pgDb: { url: string; drop(): Promise<void> } | undefined;
  let databaseUrl = opts.databaseUrl;
  if (!databaseUrl && usingPostgres()) {
    pgDb = await freshPostgresDatabase();
    databaseUrl = pgDb.url;
  }
  const env: Record<string, string> = {
    BERTH_SECRET_KEY: randomBytes(32).toString('base64'),
    BERTH_EDGE_PORT: '0',
    // Test peers (s3rver, the PostgreSQL cluster) listen on loopback, which Berth refuses as an
    // outbound target unless listed (contract section 17); test/security/ clears it to see the refusal.
    BERTH_OUTBOUND_ALLOW: '127.0.0.1,localhost',
    // Suites open many upload sessions for one member; test/security/upload-disk-exhaustion clears
    // this to run with the contract's 5.
    BERTH_UPLOAD_MAX_OPEN_SESSIONS: '1000',
    // Most suites sign up several accounts; test/auth/signup-modes covers the invite-only default.
    BERTH_SIGNUP: 'open',
    // Suites keep local backup destinations in their own temp folders; test/security/local-backup-root
    // runs with the default root (<data-dir>/backups) to see everything else refused.
    BERTH_LOCAL_BACKUP_ROOT: os.tmpdir(),
    // Loop mounts outlive temp folders: suites run without disk images; test/deployments/disk-limits
    // turns them on and unmounts what it made.
    BERTH_DISK_LIMITS: 'off',
    ...opts.env,
    BERTH_DATA_DIR: dataDir,
  };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  const config = loadConfig({ host: '127.0.0.1', port: 0, ...opts.flags }, env as NodeJS.ProcessEnv);
  config.logLevel = opts.logLevel ?? process.env.BERTH_TEST_LOG ?? 'silent';
  const app = await buildApp(config, { logger: createLogger(config.logLevel), ...opts.build, ...(opts.ports ? { ports: { ...opts.build?.ports, ...opts.ports } } : {}), ...(opts.clock ? { clock: opts.clock } : {}) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  if (opts.background) await app.berth.startBackground();
  const addr = app.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    url,
    app,
    ctx: app.berth.ctx,
    config,
    dataDir,
    api: (token?: string) => new HttpClient(url, token),
    async close() {
      await app.close();
      if (pgDb) await pgDb.drop();
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
