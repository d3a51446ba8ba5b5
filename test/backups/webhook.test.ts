import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sha256Hex } from '../../src/lib/crypto.js';
import { createDestination, createProjectWithVolume, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { waitTerminal } from './helpers.js';

const LIMIT = 12;

describe('backup webhook trigger', () => {
  let server: TestServer;
  let owner: TestUser;
  let destId: string;

  before(async () => {
    server = await startTestServer({ background: true, env: { BERTH_WEBHOOK_RATE_LIMIT: String(LIMIT) } });
    owner = await createUser(server);
    destId = (await createDestination(server, owner)).id;
  });
  after(() => server.close());

  const hook = (headers: Record<string, string> = {}) =>
    fetch(`${server.url}/api/webhooks/backup`, { method: 'POST', headers, signal: AbortSignal.timeout(10000) }).then(async (r) => ({ status: r.status, text: await r.text(), headers: r.headers }));

  let requests = 0;
  const counted = async (headers: Record<string, string> = {}) => {
    requests++;
    return hook(headers);
  };

  it('the token is shown once when enabled or rotated, stored only as a hash, and starts a run', async () => {
    const p = await createProjectWithVolume(server, owner);
    const created = await server.api(owner.token).post(`/api/projects/${p.id}/backup-policies`, { destinationId: destId, enableWebhook: true });
    const token = created.body.data.webhookToken;
    assert.match(token, /^berth_bwh_/);
    assert.equal(created.body.data.webhookEnabled, true);
    const row = await server.ctx.db.selectFrom('backupPolicies').selectAll().where('id', '=', created.body.data.id).executeTakeFirstOrThrow();
    assert.equal(row.webhookTokenHash, sha256Hex(token));
    assert.ok(!JSON.stringify(row).includes(token));
    const listed = await server.api(owner.token).get(`/api/projects/${p.id}/backup-policies`);
    assert.ok(!listed.text.includes(token));
    assert.ok(!('webhookToken' in listed.body.data[0]));
    const ok = await counted({ authorization: `Bearer ${token}` });
    assert.equal(ok.status, 201, ok.text);
    const runId = JSON.parse(ok.text).data.runId;
    const run = await waitTerminal(server, owner.token, `/api/backup-runs/${runId}`);
    assert.equal(run.trigger, 'webhook');
    assert.equal(run.status, 'succeeded');
    // Rotation replaces the token: the old one stops working.
    const rot = await server.api(owner.token).patch(`/api/backup-policies/${created.body.data.id}`, { rotateWebhookToken: true });
    const fresh = rot.body.data.webhookToken;
    assert.ok(fresh && fresh !== token);
    assert.equal((await counted({ authorization: `Bearer ${token}` })).status, 404);
    // Enabling again while enabled shows nothing new.
    const again = await server.api(owner.token).patch(`/api/backup-policies/${created.body.data.id}`, { enableWebhook: true });
    assert.ok(!('webhookToken' in again.body.data));
  });

  it('every failure class answers the same bytes: no header, malformed, wrong token, disabled webhook, disabled or deleted policy', async () => {
    const p = await createProjectWithVolume(server, owner);
    const mk = async () => {
      const res = await server.api(owner.token).post(`/api/projects/${p.id}/backup-policies`, { destinationId: destId, enableWebhook: true });
      return { id: res.body.data.id as string, token: res.body.data.webhookToken as string };
    };
    const disabledHook = await mk();
    await server.api(owner.token).patch(`/api/backup-policies/${disabledHook.id}`, { enableWebhook: false });
    const disabledPolicy = await mk();
    await server.api(owner.token).patch(`/api/backup-policies/${disabledPolicy.id}`, { enabled: false });
    const deleted = await mk();
    await server.api(owner.token).delete(`/api/backup-policies/${deleted.id}`);
    const wrong = (await mk()).token.slice(0, -4) + 'AAAA';
    const answers = [
      await counted({}),
      await counted({ authorization: 'Basic dXNlcjpwYXNz' }),
      await counted({ authorization: 'Bearer' }),
      await counted({ authorization: `Bearer ${wrong}` }),
      await counted({ authorization: `Bearer ${disabledHook.token}` }),
      await counted({ authorization: `Bearer ${disabledPolicy.token}` }),
      await counted({ authorization: `Bearer ${deleted.token}` }),
    ];
    for (const a of answers) {
      assert.equal(a.status, 404);
      assert.equal(a.text, answers[0]!.text);
      assert.equal(a.headers.get('content-type'), answers[0]!.headers.get('content-type'));
    }
    assert.ok(!answers[0]!.text.includes('requestId'));
    assert.deepEqual(JSON.parse(answers[0]!.text), { error: { code: 'NOT_FOUND', message: 'not found' } });
    const runs = await server.api(owner.token).get(`/api/projects/${p.id}/backup-runs`);
    assert.deepEqual(runs.body.data, []);
  });

  it(`is rate-limited per client address (${LIMIT} a minute), valid token or not`, async () => {
    const p = await createProjectWithVolume(server, owner);
    const res = await server.api(owner.token).post(`/api/projects/${p.id}/backup-policies`, { destinationId: destId, enableWebhook: true });
    const token = res.body.data.webhookToken;
    let limited: Awaited<ReturnType<typeof hook>> | undefined;
    for (let i = requests; i < LIMIT + 2 && !limited; i++) {
      const r = await counted({ authorization: 'Bearer nope' });
      if (r.status === 429) limited = r;
      else assert.equal(r.status, 404);
    }
    assert.ok(limited, 'a 429 within the limit');
    assert.ok(Number(limited.headers.get('retry-after')) > 0);
    assert.equal(JSON.parse(limited.text).error.code, 'RATE_LIMITED');
    assert.equal((await hook({ authorization: `Bearer ${token}` })).status, 429);
  });
});
