import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { openDatabase, type Database, type Db } from '../../src/db/client.js';
import { inOrg, inProject } from '../../src/db/scope.js';

/**
 * The scope helper (src/db/scope.ts) on the real database of the run (SQLite, or PostgreSQL when
 * DATABASE_URL is set), over two tables of this test's own so the rows are exactly the ones written
 * here. It opens the database by itself (no server: nothing but src/db is under test). The compile-time half (a scope that does not fit the query is a type error) is checked by
 * tsc through the `@ts-expect-error` lines at the end.
 */

type ScopeTables = {
  scopeRows: { id: string; orgId: string; projectId: string; name: string };
  scopeNotes: { id: string; orgId: string; rowId: string };
};

let database: Database;
let db: ReturnType<typeof tables>;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'berth-scope-'));
const pgName = `berth_t_scope_${randomBytes(6).toString('hex')}`;
const baseUrl = process.env.DATABASE_URL;

/** Runs one statement on the PostgreSQL server of DATABASE_URL (creating and dropping this test's database). */
async function onPgServer(statement: string): Promise<void> {
  const c = new pg.Client({ connectionString: baseUrl });
  await c.connect();
  try {
    await c.query(statement);
  } finally {
    await c.end();
  }
}

function tables(d: Db) {
  return d.withTables<ScopeTables>();
}

before(async () => {
  let databaseUrl: string | undefined;
  if (baseUrl) {
    await onPgServer(`CREATE DATABASE ${pgName}`);
    const url = new URL(baseUrl);
    url.pathname = `/${pgName}`;
    databaseUrl = url.toString();
  }
  database = openDatabase({ dataDir, databaseUrl });
  db = tables(database.db);
  await db.schema.createTable('scope_rows').addColumn('id', 'text', (c) => c.primaryKey()).addColumn('org_id', 'text', (c) => c.notNull()).addColumn('project_id', 'text', (c) => c.notNull()).addColumn('name', 'text', (c) => c.notNull()).execute();
  await db.schema.createTable('scope_notes').addColumn('id', 'text', (c) => c.primaryKey()).addColumn('org_id', 'text', (c) => c.notNull()).addColumn('row_id', 'text', (c) => c.notNull()).execute();
  await db
    .insertInto('scopeRows')
    .values([
      { id: 'r1', orgId: 'org_a', projectId: 'prj_1', name: 'a1' },
      { id: 'r2', orgId: 'org_a', projectId: 'prj_2', name: 'a2' },
      { id: 'r3', orgId: 'org_b', projectId: 'prj_1', name: 'b1' },
    ])
    .execute();
  await db
    .insertInto('scopeNotes')
    .values([
      { id: 'n1', orgId: 'org_a', rowId: 'r1' },
      { id: 'n2', orgId: 'org_b', rowId: 'r1' },
    ])
    .execute();
});
after(async () => {
  await database?.close();
  if (baseUrl) await onPgServer(`DROP DATABASE IF EXISTS ${pgName} WITH (FORCE)`);
  rmSync(dataDir, { recursive: true, force: true });
});

const ids = (rows: { id: string }[]) => rows.map((r) => r.id).sort();

describe('the scope helper (src/db/scope.ts)', () => {
  it('inOrg keeps the rows of one org, in a select, an update and a delete', async () => {
    assert.deepEqual(ids(await db.selectFrom('scopeRows').select('id').where(inOrg('org_a')).execute()), ['r1', 'r2']);
    assert.deepEqual(ids(await db.selectFrom('scopeRows').select('id').where(inOrg('org_c')).execute()), []);
    const updated = await db.updateTable('scopeRows').set({ name: 'renamed' }).where(inOrg('org_b')).where('id', '=', 'r1').executeTakeFirst();
    assert.equal(Number(updated.numUpdatedRows), 0, 'org_b has no row r1');
    await db.updateTable('scopeRows').set({ name: 'b1-renamed' }).where(inOrg('org_b')).execute();
    assert.deepEqual(await db.selectFrom('scopeRows').select(['id', 'name']).orderBy('id').execute(), [
      { id: 'r1', name: 'a1' },
      { id: 'r2', name: 'a2' },
      { id: 'r3', name: 'b1-renamed' },
    ]);
    const deleted = await db.deleteFrom('scopeNotes').where(inOrg('org_b')).executeTakeFirst();
    assert.equal(Number(deleted.numDeletedRows), 1);
    await db.insertInto('scopeNotes').values({ id: 'n2', orgId: 'org_b', rowId: 'r1' }).execute();
  });

  it('inProject keeps the rows of one project of one org: the same project id in another org is not in it', async () => {
    assert.deepEqual(ids(await db.selectFrom('scopeRows').select('id').where(inProject('org_a', 'prj_1')).execute()), ['r1']);
    assert.deepEqual(ids(await db.selectFrom('scopeRows').select('id').where(inProject('org_b', 'prj_1')).execute()), ['r3']);
    assert.deepEqual(ids(await db.selectFrom('scopeRows').select('id').where(inProject('org_b', 'prj_2')).execute()), []);
  });

  it('with a table name (or alias) it scopes that table of a join', async () => {
    const notes = await db.selectFrom('scopeNotes as n').innerJoin('scopeRows as r', 'r.id', 'n.rowId').select('n.id').where(inOrg('org_b', 'n')).execute();
    assert.deepEqual(ids(notes), ['n2']);
    const rows = await db.selectFrom('scopeRows').innerJoin('scopeNotes', 'scopeNotes.rowId', 'scopeRows.id').select('scopeNotes.id').where(inProject('org_a', 'prj_1', 'scopeRows')).execute();
    assert.deepEqual(ids(rows), ['n1', 'n2']);
  });

  it('compiles to the clauses it replaces: org_id = ?, and (org_id = ? and project_id = ?)', () => {
    const q = (f: (d: typeof db) => { compile(): { sql: string; parameters: readonly unknown[] } }) => f(db).compile();
    const byHand = q((d) => d.selectFrom('scopeRows').select('id').where('orgId', '=', 'o'));
    const scoped = q((d) => d.selectFrom('scopeRows').select('id').where(inOrg('o')));
    assert.equal(scoped.sql, byHand.sql);
    assert.deepEqual(scoped.parameters, ['o']);
    const project = q((d) => d.deleteFrom('scopeRows').where(inProject('o', 'p')));
    assert.match(project.sql, /where \("org_id" = (\?|\$1) and "project_id" = (\?|\$2)\)$/);
    assert.deepEqual(project.parameters, ['o', 'p']);
    const joined = q((d) => d.selectFrom('scopeNotes as n').innerJoin('scopeRows as r', 'r.id', 'n.rowId').select('n.id').where(inOrg('o', 'r')));
    assert.match(joined.sql, /where "r"\."org_id" = (\?|\$1)$/);
  });

  it('does not type-check where the scope does not fit the query', () => {
    const compileOnly = () => {
      // @ts-expect-error two tables of the join have org_id: a bare one would be ambiguous
      db.selectFrom('scopeNotes').innerJoin('scopeRows', 'scopeRows.id', 'scopeNotes.rowId').select('scopeNotes.id').where(inOrg('o'));
      // @ts-expect-error scope_notes has no project_id
      db.selectFrom('scopeNotes').select('id').where(inProject('o', 'p'));
      // @ts-expect-error users has no org_id
      database.db.selectFrom('users').select('id').where(inOrg('o'));
      // @ts-expect-error scope_notes is not in the query
      db.selectFrom('scopeRows').select('id').where(inOrg('o', 'scopeNotes'));
    };
    assert.equal(typeof compileOnly, 'function');
  });
});
