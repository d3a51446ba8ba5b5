import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import SQLite from 'better-sqlite3';
import type pgTypes from 'pg';
import type { Transaction } from 'kysely';
import { CamelCasePlugin, Kysely, Migrator, PostgresDialect, SqliteDialect } from './kysely.js';
import type { DB } from './schema.js';
import { WriteEvents } from './write-events.js';
import { countingPool, RoundTrips } from './pg-pool.js';
import { migrations } from './migrations/index.js';

export type Dialect = 'sqlite' | 'postgres';
export type Db = Kysely<DB>;
export type Tx = Transaction<DB>;

export interface Database {
  db: Db;
  dialect: Dialect;
  /** Which tables the query builder writes, as queries are compiled (read caches listen). */
  writes: WriteEvents;
  /** PostgreSQL only: the round trips sent (`db/pg-pool.ts`). */
  roundTrips?: RoundTrips;
  close(): Promise<void>;
}

/**
 * The PostgreSQL driver, loaded on first use: an instance on the embedded SQLite default never pays
 * for it in memory. (pg is CommonJS, so a synchronous require keeps openDatabase synchronous.)
 */
let pgModule: typeof pgTypes | undefined;
function loadPg(): typeof pgTypes {
  if (pgModule) return pgModule;
  const pg = createRequire(import.meta.url)('pg') as typeof pgTypes;
  // PostgreSQL answers int8 (count(*), bigint columns) as strings; every such value here fits a JS number.
  pg.types.setTypeParser(20, (v) => Number(v));
  pg.types.setTypeParser(1700, (v) => Number(v));
  return (pgModule = pg);
}

export interface OpenOptions {
  dataDir: string;
  databaseUrl?: string;
  /** PostgreSQL: the pool's size (config.pg.poolMax, BERTH_PG_POOL_MAX; default PG_POOL_MAX). */
  poolMax?: number;
  /** PostgreSQL: named prepared statements kept per connection (config.pg, BERTH_PG_PREPARED; default 0: none). */
  preparePerConnection?: number;
  /**
   * PostgreSQL: `synchronous_commit` of Berth's sessions (config.pg, BERTH_PG_SYNCHRONOUS_COMMIT);
   * unset: the server's own (the admin CLI's one-off connections).
   */
  synchronousCommit?: string;
}

/** The pool size when BERTH_PG_POOL_MAX is not set (docs/decisions.md, "PostgreSQL: pool, prepared statements and round trips"). */
export const PG_POOL_MAX = 10;

export function openDatabase(opts: OpenOptions): Database {
  const writes = new WriteEvents();
  // First: it sees table names as the code writes them (camelCase), before CamelCasePlugin.
  const plugins = [writes, new CamelCasePlugin()];
  if (opts.databaseUrl) {
    const pg = loadPg();
    const roundTrips = new RoundTrips();
    const session: Record<string, string> = opts.synchronousCommit ? { synchronous_commit: opts.synchronousCommit } : {};
    const pool = countingPool(pg, { connectionString: opts.databaseUrl, max: opts.poolMax ?? PG_POOL_MAX, idleTimeoutMillis: 30_000, preparePerConnection: opts.preparePerConnection ?? 0, session }, roundTrips);
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), plugins });
    return { db, dialect: 'postgres', writes, roundTrips, close: () => db.destroy() };
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const file = path.join(opts.dataDir, 'berth.db');
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }), plugins });
  return { db, dialect: 'sqlite', writes, close: () => db.destroy() };
}

/**
 * better-sqlite3 compiles a statement on every `prepare`; Kysely prepares each query anew. Reusing
 * prepared statements by SQL text halves the cost of a small query. Bounded; Kysely never holds a
 * statement across awaits (it runs `all`/`run` synchronously), so reuse is safe.
 */
function withStatementCache(sqlite: SQLite.Database): SQLite.Database {
  const cache = new Map<string, SQLite.Statement>();
  const MAX = 1000;
  const prepare = sqlite.prepare.bind(sqlite);
  return new Proxy(sqlite, {
    get(target, prop, receiver) {
      if (prop === 'prepare') {
        return (source: string) => {
          let stmt = cache.get(source);
          if (!stmt) {
            stmt = prepare(source);
            if (cache.size >= MAX) cache.delete(cache.keys().next().value!);
            cache.set(source, stmt);
          }
          return stmt;
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

export async function migrateToLatest(db: Db): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    // Areas add numbered migrations side by side; a database migrated before one of them landed
    // still takes it.
    allowUnorderedMigrations: true,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}

/**
 * Runs `fn` in one transaction on either dialect. Inside, use only the `tx` handle: on SQLite the
 * single connection is held by the transaction, so a query through the outer handle would wait forever.
 */
export function transaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  if (db.isTransaction) return fn(db as Tx);
  return db.transaction().execute(fn);
}

/** True when `e` is a unique-constraint violation on either dialect. */
export function isUniqueViolation(e: unknown): boolean {
  const err = e as { code?: string; message?: string };
  return err?.code === '23505' || err?.code === 'SQLITE_CONSTRAINT_UNIQUE' || err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
