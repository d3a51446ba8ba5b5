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
  /**
   * Settings of every session this pool opens (`set_config`, once per connection, before its first
   * query): `synchronous_commit` (BERTH_PG_SYNCHRONOUS_COMMIT). Not counted in `RoundTrips.count`:
   * they are part of opening the connection, like its startup.
   */
  session?: Record<string, string>;
}

/** A prepared statement's name: a hash of its SQL text (the same text is the same statement on every connection). */
export function statementName(sql: string): string {
  return `b_${createHash('sha1').update(sql).digest('base64url').slice(0, 22)}`;
}

type Query = (text: unknown, values?: unknown) => Promise<unknown>;

/** Uses of a statement text (in this process) before connections prepare it: one-off statements (migrations, rare admin work) never are. */
const PREPARE_AFTER_USES = 2;

/**
 * The pg pool Kysely runs on, with each client's `query` counted (`RoundTrips`) and, when
 * `preparePerConnection` > 0, parameterised queries sent as named prepared statements once their
 * text has been used PREPARE_AFTER_USES times: the first use on a connection parses it (in the same
 * round trip), later uses only bind and execute, and PostgreSQL may keep a generic plan. A connection
 * prepares at most `preparePerConnection` statements (queries with a varying `in (...)` list or row
 * count would otherwise grow the set without bound); beyond that, queries run unnamed as before.
 *
 * A prepared `select *` fails once its table gained a column ("cached plan must not change result
 * type", 0A000: another instance migrated the database). The connection then stops using the
 * statements it prepared (new names from then on; the old ones go with the connection) and the
 * query's error is the caller's, once.
 */
export function countingPool(pg: typeof pgTypes, opts: PgPoolOptions, trips: RoundTrips): PostgresPool {
  const pool = new pg.Pool({ connectionString: opts.connectionString, max: opts.max, idleTimeoutMillis: opts.idleTimeoutMillis, keepAlive: true });
  // A dropped idle connection must not take the process down.
  pool.on('error', () => {});
  pool.on('connect', () => void trips.connections++);
  const wrapped = new WeakSet<object>();
  const seen = new Map<string, { name: string; uses: number }>();
  const statementOf = (sql: string) => {
    let st = seen.get(sql);
    if (!st) {
      st = { name: statementName(sql), uses: 0 };
      if (seen.size >= 10000) seen.clear();
      seen.set(sql, st);
    }
    st.uses++;
    return st;
  };

  const wrap = (client: pgTypes.PoolClient): void => {
    const query = client.query.bind(client) as Query;
    let prepared = new Set<string>();
    let total = 0;
    let generation = 0;
    (client as unknown as { query: Query }).query = (text: unknown, values?: unknown) => {
      if (typeof text !== 'string') {
        const t = (text as { text?: unknown })?.text;
        trips.note(typeof t === 'string' ? t : '(cursor)');
        return query(text, values);
      }
      trips.note(text);
      if (opts.preparePerConnection > 0 && Array.isArray(values) && values.length > 0) {
        const st = statementOf(text);
        if (st.uses >= PREPARE_AFTER_USES && (prepared.has(text) || total < opts.preparePerConnection)) {
          if (!prepared.has(text)) {
            prepared.add(text);
            total++;
          }
          const name = generation ? `${st.name}_${generation}` : st.name;
          return query({ name, text, values }).catch((e: { code?: string }) => {
            if (e?.code === '0A000') {
              generation++;
              prepared = new Set();
            }
            throw e;
          });
        }
      }
      return query(text, values);
    };
  };

  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      if (!wrapped.has(client)) {
        try {
          for (const [name, value] of Object.entries(opts.session ?? {})) await client.query('select set_config($1, $2, false)', [name, value]);
        } catch (e) {
          // A connection whose settings failed is not used with the server's defaults: it is closed.
          client.release(e as Error);
          throw e;
        }
        wrap(client);
        wrapped.add(client);
      }
      return client as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}
