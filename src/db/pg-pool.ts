import { createHash } from 'node:crypto';
import type pgTypes from 'pg';
import type { PostgresPool, PostgresPoolClient } from 'kysely';

/**
 * Round trips to PostgreSQL, counted where they happen: every `client.query` the driver sends is one
 * (BEGIN and COMMIT included; pg sends a parameterised query's Parse, Bind, Execute and Sync in one
 * write and waits for one answer). Opening a connection costs several more (startup, authentication,
 * parameters): counted apart, in `connections`. One per database handle (`Database.roundTrips`); tests
 * read it to hold the hot routes to their budgets (`test/db/round-trips.test.ts`).
 */
export class RoundTrips {
  /** Queries sent since the handle was opened. */
  count = 0;
  /** Connections opened since the handle was opened. */
  connections = 0;
  private recorders = new Set<string[]>();

  /** Starts recording the SQL of each round trip; the answered function stops and returns them. */
  record(): () => string[] {
    const sqls: string[] = [];
    this.recorders.add(sqls);
    return () => {
      this.recorders.delete(sqls);
      return sqls;
    };
  }

  note(sql: string): void {
    this.count++;
    for (const r of this.recorders) r.push(sql);
  }
}

export interface PgPoolOptions {
  connectionString: string;
  /** Most connections the pool opens (BERTH_PG_POOL_MAX). */
  max: number;
  /** An idle connection is closed after this long. */
  idleTimeoutMillis: number;
  /**
   * Named prepared statements per connection: the most distinct statements one connection keeps
   * prepared (0: none; every query is parsed and planned anew).
   */
  preparePerConnection: number;
}

/** A prepared statement's name: a hash of its SQL text (the same text is the same statement on every connection). */
export function statementName(sql: string): string {
  return `b_${createHash('sha1').update(sql).digest('base64url').slice(0, 22)}`;
}

type Query = (text: unknown, values?: unknown) => Promise<unknown>;

/**
 * The pg pool Kysely runs on, with each client's `query` counted (`RoundTrips`) and, when
 * `preparePerConnection` > 0, parameterised queries sent as named prepared statements: the first use
 * on a connection parses it (in the same round trip), later uses only bind and execute. A connection
 * stops preparing new statements once it holds `preparePerConnection` of them (queries with a
 * varying `in (...)` list would otherwise grow the set without bound); those run unnamed as before.
 */
export function countingPool(pg: typeof pgTypes, opts: PgPoolOptions, trips: RoundTrips): PostgresPool {
  const pool = new pg.Pool({ connectionString: opts.connectionString, max: opts.max, idleTimeoutMillis: opts.idleTimeoutMillis });
  // A dropped idle connection must not take the process down.
  pool.on('error', () => {});
  pool.on('connect', () => void trips.connections++);
  const wrapped = new WeakSet<object>();
  const names = new Map<string, string>();
  const nameOf = (sql: string): string => {
    let n = names.get(sql);
    if (n === undefined) {
      n = statementName(sql);
      if (names.size < 10000) names.set(sql, n);
    }
    return n;
  };

  const wrap = (client: pgTypes.PoolClient): void => {
    const query = client.query.bind(client) as Query;
    const prepared = new Set<string>();
    (client as unknown as { query: Query }).query = (text: unknown, values?: unknown) => {
      if (typeof text !== 'string') {
        const t = (text as { text?: unknown })?.text;
        trips.note(typeof t === 'string' ? t : '(cursor)');
        return query(text, values);
      }
      trips.note(text);
      if (opts.preparePerConnection > 0 && Array.isArray(values) && values.length > 0) {
        const name = nameOf(text);
        if (prepared.has(name) || prepared.size < opts.preparePerConnection) {
          prepared.add(name);
          return query({ name, text, values });
        }
      }
      return query(text, values);
    };
  };

  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      if (!wrapped.has(client)) {
        wrap(client);
        wrapped.add(client);
      }
      return client as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}
