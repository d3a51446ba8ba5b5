import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createProject, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, usingPostgres, type TestServer } from '../support/harness.js';

/**
 * Env PATCHes written as a compare-and-set on the environment's revision (`env.service.ts`
 * writeEnvPatch, `env.store.ts` applyEnvPatch): PATCHes of one environment queue in each process and
 * hand what they wrote to the next in line; a write that finds the revision moved (another instance
 * wrote) reads again, or is 409 with If-Match. On PostgreSQL a second server on the same database
 * stands for another instance; on SQLite (one instance per data dir) both halves go to one server.
 */

let a: TestServer;
let b: TestServer;
let owner: TestUser;
const secretKey = randomBytes(32).toString('base64');

before(async () => {
  a = await startTestServer({ env: { BERTH_SECRET_KEY: secretKey } });
  b = usingPostgres() ? await startTestServer({ env: { BERTH_SECRET_KEY: secretKey }, databaseUrl: a.config.databaseUrl }) : a;
  owner = await createUser(a);
});
after(async () => {
  if (b !== a) await b?.close();
  await a?.close();
});

describe('concurrent env PATCHes of one environment', () => {
  it('lose no change: twenty at once, half on each instance, each with its own key and one shared key, all land and each bumps the revision once', async () => {
    const { id } = await createProject(a, owner, { name: 'env-race' });
    const first = await a.api(owner.token).get(`/api/projects/${id}/env`);
    const revision = (etag: string) => Number(/\.(\d+)"$/.exec(etag)![1]);
    const start = revision(first.headers.get('etag')!);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? b : a).api(owner.token).patch(`/api/projects/${id}/env`, { upserts: [{ key: `K_${i}`, value: `v${i}`, isSecret: i % 3 === 0 }, { key: 'SHARED', value: `s${i}` }] }),
      ),
    );
    for (const r of answers) assert.equal(r.status, 200, r.text);
    // Each answer is the set its own write left: its key is there, and the ETags are twenty different revisions.
    answers.forEach((r, i) => assert.ok(r.body.data.some((v: { key: string }) => v.key === `K_${i}`), `answer ${i} holds K_${i}`));
    assert.deepEqual(answers.map((r) => revision(r.headers.get('etag')!)).sort((x, y) => x - y), Array.from({ length: 20 }, (_, i) => start + i + 1));
    const final = await b.api(owner.token).get(`/api/projects/${id}/env`);
    const vars = new Map((final.body.data as { key: string; value: string; isSecret: boolean }[]).map((v) => [v.key, v]));
    assert.equal(vars.size, 21);
    for (let i = 0; i < 20; i++) {
      assert.equal(vars.get(`K_${i}`)?.isSecret, i % 3 === 0);
      assert.equal(vars.get(`K_${i}`)?.value, i % 3 === 0 ? '********' : `v${i}`);
    }
    assert.match(vars.get('SHARED')!.value, /^s\d+$/);
    assert.equal(revision(final.headers.get('etag')!), start + 20);
  });

  it('with one If-Match, exactly one of several PATCHes sent at once (on both instances) is written; the others are 409 and write nothing', async () => {
    const { id } = await createProject(a, owner, { name: 'env-ifmatch' });
    const etag = (await a.api(owner.token).get(`/api/projects/${id}/env`)).headers.get('etag')!;
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? b : a).api(owner.token).patch(`/api/projects/${id}/env`, { upserts: [{ key: `ONLY_${i}`, value: 'x' }] }, { 'if-match': etag })),
    );
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409, 409, 409, 409, 409]);
    const keys = ((await a.api(owner.token).get(`/api/projects/${id}/env`)).body.data as { key: string }[]).map((v) => v.key);
    assert.equal(keys.length, 1);
    assert.equal(keys[0], `ONLY_${answers.findIndex((r) => r.status === 200)}`);
  });

  it("a PATCH after another instance's write starts from that write: the secret flag it set is kept for a key upserted without one", async () => {
    const { id } = await createProject(a, owner, { name: 'env-elsewhere' });
    assert.equal((await a.api(owner.token).patch(`/api/projects/${id}/env`, { upserts: [{ key: 'TOKEN', value: 'plain' }] })).status, 200);
    assert.equal((await b.api(owner.token).patch(`/api/projects/${id}/env`, { upserts: [{ key: 'TOKEN', value: 'now-secret', isSecret: true }] })).status, 200);
    const r = await a.api(owner.token).patch(`/api/projects/${id}/env`, { upserts: [{ key: 'TOKEN', value: 'rotated' }] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.data, [{ key: 'TOKEN', value: '********', isSecret: true, environment: 'production', updatedAt: r.body.data[0].updatedAt }]);
  });
});
