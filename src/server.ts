import { chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { acquireDirLock, acquireInstanceLock } from './lib/lockfile.js';
import { claimServerUidRange } from './runtime/identity.js';
import { edgeUrlOf } from './modules/hosting/index.js';

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  stop(): Promise<void>;
}

/**
 * `berth serve`: takes the data dir's lock, builds the app, listens, starts the workers and the
 * scheduler, and prints `api listening on http://HOST:PORT`.
 */
export async function startServer(config: Config, print: (line: string) => void = (l) => console.log(l)): Promise<RunningServer> {
  // Nothing the server writes (database, WAL, secret key, uploads, builds, logs) is readable by
  // other local users; a sandboxed project's own files are handed to its uid explicitly.
  process.umask(0o077);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(config.dataDir, 0o700);
  // Files an older Berth (or an admin command run with another umask) left readable.
  for (const f of ['berth.db', 'berth.db-wal', 'berth.db-shm', 'secret.key']) {
    try {
      chmodSync(path.join(config.dataDir, f), 0o600);
    } catch {
      /* not there */
    }
  }
  // SQLite: one server per data dir. PostgreSQL: several instances share the data dir (volumes,
  // builds, logs, the secret key), each under its own name (docs/scale-out.md).
  const release = config.databaseUrl ? acquireInstanceLock(config.dataDir, config.instance.name ?? 'default') : acquireDirLock(config.dataDir);
  let app: FastifyInstance;
  try {
    // Builds and apps run as uids of their own (root; sandbox or docker): from this data dir's range,
    // which no other Berth on the host shares (src/runtime/uid-range.ts; refused on an overlap).
    const uidRange = process.getuid?.() === 0 && config.runtime !== 'process' ? claimServerUidRange(config.dataDir) : null;
    app = await buildApp(config, { uidRange });
    await app.listen({ host: config.host, port: config.port });
  } catch (e) {
    release();
    throw e;
  }
  const addr = app.server.address();
  const port = addr && typeof addr === 'object' ? addr.port : config.port;
  const hostPart = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${hostPart}:${port}`;
  await app.berth.startBackground();
  print(`api listening on ${url}`);
  const edgeUrl = edgeUrlOf(app.berth.ctx);
  if (edgeUrl) print(`edge listening on ${edgeUrl}`);
  let stopping: Promise<void> | null = null;
  return {
    app,
    url,
    stop() {
      stopping ??= (async () => {
        try {
          await app.close();
        } finally {
          release();
        }
      })();
      return stopping;
    },
  };
}

/** Runs until SIGTERM or SIGINT, then drains in-flight requests and exits 0. */
export async function serveForever(config: Config): Promise<void> {
  const server = await startServer(config);
  const shutdown = (signal: string) => {
    server.app.berth.ctx.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      console.error('shutdown took too long; exiting');
      process.exit(1);
    }, 30000);
    force.unref();
    server
      .stop()
      .then(() => process.exit(0))
      .catch((e) => {
        console.error(`error during shutdown: ${(e as Error).message}`);
        process.exit(1);
      });
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}
