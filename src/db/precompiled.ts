import type { Compilable, CompiledQuery } from 'kysely';
import type { Db } from './client.js';

/**
 * A query built and compiled once per database handle, then run with new values: Kysely otherwise
 * rebuilds, transforms and compiles the query's tree on every call, which costs several times what
 * SQLite takes to answer a lookup by key. For the reads every request to a project makes (the
 * resolver's, the record's). `build` gets a placeholder for each value and must use each once, as a
 * value; the compiled parameters are matched back to the placeholders, so their order in the SQL
 * does not matter.
 */
export function precompiled<R>(arity: number, build: (db: Db, values: string[]) => Compilable<R>) {
  const marks = Array.from({ length: arity }, (_, i) => `\u0000precompiled-${i}\u0000`);
  const byDb = new WeakMap<Db, { query: CompiledQuery<R>; slots: number[] }>();
  return async (db: Db, ...values: string[]): Promise<R[]> => {
    let c = byDb.get(db);
    if (!c) {
      const query = build(db, marks).compile();
      const slots = query.parameters.map((p) => marks.indexOf(p as string));
      if (slots.length !== arity || slots.some((i) => i < 0) || new Set(slots).size !== arity) throw new Error(`a precompiled query must use each of its ${arity} values once: ${query.sql}`);
      c = { query, slots };
      // A transaction's handle lives for one transaction: compiled for it, not remembered.
      if (!db.isTransaction) byDb.set(db, c);
    }
    const parameters = c.slots.map((i) => values[i]);
    return (await db.executeQuery<R>({ ...c.query, parameters })).rows;
  };
}

