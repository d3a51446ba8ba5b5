import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isUniqueViolation, transaction } from '../../src/db/client.js';
import { newId, nowIso } from '../../src/lib/ids.js';
import { startTestServer, type TestServer } from '../support/harness.js';

describe('the store', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('a transaction that throws leaves nothing written', async () => {
    const { db } = server.ctx;
    const id = newId('org');
    await assert.rejects(
      transaction(db, async (tx) => {
        await tx.insertInto('orgs').values({ id, name: 'half', isTeam: 0, createdAt: nowIso() }).execute();
        throw new Error('stop here');
      }),
      /stop here/,
    );
    assert.equal(await db.selectFrom('orgs').select('id').where('id', '=', id).executeTakeFirst(), undefined);
  });

  it('a transaction that returns commits everything; nested calls join the outer transaction', async () => {
    const { db } = server.ctx;
    const a = newId('org');
    const b = newId('org');
    await transaction(db, async (tx) => {
      await tx.insertInto('orgs').values({ id: a, name: 'a', isTeam: 0, createdAt: nowIso() }).execute();
      await transaction(tx, async (inner) => {
        await inner.insertInto('orgs').values({ id: b, name: 'b', isTeam: 1, createdAt: nowIso() }).execute();
      });
    });
    const rows = await db.selectFrom('orgs').select(['id', 'isTeam']).where('id', 'in', [a, b]).orderBy('name').execute();
    assert.deepEqual(rows, [
      { id: a, isTeam: 0 },
      { id: b, isTeam: 1 },
    ]);
  });

  it('unique violations are recognised on both dialects', async () => {
    const { db } = server.ctx;
    const email = `${newId('x')}@example.test`;
    const row = { id: newId('usr'), email, name: 'x', passwordHash: null, createdAt: nowIso(), updatedAt: nowIso() };
    await db.insertInto('users').values(row).execute();
    try {
      await db.insertInto('users').values({ ...row, id: newId('usr') }).execute();
      assert.fail('expected a unique violation');
    } catch (e) {
      assert.ok(isUniqueViolation(e), String(e));
    }
  });

  it('counts come back as numbers on both dialects', async () => {
    const { db } = server.ctx;
    const r = await db.selectFrom('orgs').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    assert.equal(typeof r.n, 'number');
  });

  it('SQLite runs in WAL mode with foreign keys on', async () => {
    if (server.ctx.dialect !== 'sqlite') return;
    const { sql } = await import('kysely');
    const mode = await sql<{ journalMode: string }>`PRAGMA journal_mode`.execute(server.ctx.db);
    assert.equal(mode.rows[0]!.journalMode, 'wal');
    const fk = await sql<{ foreignKeys: number }>`PRAGMA foreign_keys`.execute(server.ctx.db);
    assert.equal(fk.rows[0]!.foreignKeys, 1);
  });
});
