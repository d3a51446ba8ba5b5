import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { resourceInfo, type AnyRoute, type ModuleDef } from '../../src/http/route.js';
import { cloudRecordRoutes } from '../../src/modules/cloud/cloud-records.js';
import { createLogger } from '../../src/lib/logger.js';
import { insertDestination } from '../../src/modules/backups/backups.store.js';
import { readSse, waitTerminal } from '../backups/helpers.js';
import { createTeam, createUser, createGrant, createPolicy, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';

/**
 * Backup routes named by a policy, run or restore id, for a project that lives on the cloud
 * (docs/cloud.md, Forwarding): two real servers, a cloud (running its jobs worker, so runs and
 * restores execute there) and a self-hosted instance linked to it.
 */

/** Loaded on the cloud: records every request that passed the cloud's gate on a routed record. */
function recorderModule(seen: Array<{ method: string; url: string; requestId: string }>): ModuleDef {
  return {
    name: 'recorder',
    routes: [],
    async forward(_def, req, _reply, ctx) {
      if (ctx.config.mode === 'cloud') seen.push({ method: req.method, url: req.url, requestId: req.id });
      return false;
    },
  };
}

const stripId = (b: any) => ({ ...b?.error, requestId: undefined });

/**
 * A local-folder destination of the cloud org. The cloud's API refuses local destinations (they are
 * for an operator's own instance), so the test writes the row itself; the runner serves it as usual.
 */
async function cloudLocalDestination(server: TestServer, orgId: string): Promise<{ id: string; dir: string }> {
  const dir = tempDir('berth-cloud-dest-');
  const id = `bkd_${randomBytes(10).toString('hex')}`;
  const now = new Date().toISOString();
  await insertDestination(server.ctx.db, {
    id, orgId, name: 'cloud-folder', kind: 'local', path: dir, endpoint: null, region: null, bucket: null, prefix: null,
    accessKeyId: null, secretAccessKey: null, forcePathStyle: 0, createdAt: now, updatedAt: now,
  });
  return { id, dir };
}

describe('backup routes named by a cloud record\'s id, through a linked self-hosted instance', () => {
  let cloud: TestServer;
  let self: TestServer;
  let cloudOwner: TestUser;
  let cloudDest: { id: string; dir: string };
  let team: TestOrg;
  let otherOrg: TestUser;
  const seen: Array<{ method: string; url: string; requestId: string }> = [];
  /** The `data` volume of a project on the cloud. */
  const volumeOf = (cloudId: string) => path.join(cloud.dataDir, 'volumes', cloudId, 'data');
  /** Everything both servers log, at every level. */
  const logged: string[] = [];
  const sink = () => createLogger('trace', new Writable({ write: (chunk, _enc, cb) => (logged.push(String(chunk)), cb()) }));

  async function toCloud(owner: TestUser, name: string): Promise<{ id: string; cloudId: string }> {
    const p = (await self.api(owner.token).post('/api/projects', { name })).body.data;
    const t = await self.api(owner.token).post(`/api/projects/${p.id}/transfer/to-cloud`);
    assert.equal(t.status, 200, t.text);
    return { id: p.id, cloudId: t.body.data.cloudProjectId };
  }

  /** A fresh project of the team, moved to the cloud: its local id and the cloud's. */
  const cloudProject = () => toCloud(team.owner, `Vault-${randomBytes(3).toString('hex')}`);

  /** A fresh cloud project of the team with a policy to the cloud org's folder (written on the cloud, by its backups service). */
  async function cloudPolicy(body: Record<string, unknown> = {}): Promise<{ projectId: string; cloudId: string; policyId: string }> {
    const { id: projectId, cloudId } = await cloudProject();
    const policy = await createPolicy(cloud, cloudOwner, { id: cloudId }, { destinationId: cloudDest.id, ...body });
    return { projectId, cloudId, policyId: policy.id };
  }

  /**
   * A cloud policy (as `cloudPolicy`) run once to success on the cloud, while its project's volume held
   * `state.txt` = "version 1".
   */
  async function finishedRun(body: Record<string, unknown> = {}): Promise<{ projectId: string; cloudId: string; policyId: string; runId: string }> {
    const p = await cloudPolicy(body);
    mkdirSync(volumeOf(p.cloudId), { recursive: true });
    writeFileSync(path.join(volumeOf(p.cloudId), 'state.txt'), 'version 1\n');
    const started = await cloud.api(cloudOwner.token).post(`/api/backup-policies/${p.policyId}/run`);
    assert.equal(started.status, 201, started.text);
    const run = await waitTerminal(cloud, cloudOwner.token, `/api/backup-runs/${started.body.data.runId}`, 20_000);
    assert.equal(run.status, 'succeeded', JSON.stringify(run));
    return { ...p, runId: run.id };
  }

  before(async () => {
    cloud = await startTestServer({ flags: { mode: 'cloud' }, background: true, logLevel: 'trace', build: { modules: [recorderModule(seen)], logger: sink() } });
    cloudOwner = await createUser(cloud);
    cloudDest = await cloudLocalDestination(cloud, cloudOwner.orgId);
    self = await startTestServer({ logLevel: 'trace', env: { BERTH_CLOUD_URL: cloud.url, BERTH_CLOUD_TOKEN: cloudOwner.token }, build: { logger: sink() } });
    team = await createTeam(self);
    otherOrg = await createUser(self);
    // The other local org has a cloud project of its own (in the same cloud org, through the same link).
    await toCloud(otherOrg, 'Theirs');
  });
  after(async () => {
    await self?.close();
    await cloud?.close().catch(() => {});
  });

  it('every backup route named by a policy, run or restore id is forwarded for a cloud record, and no other backup route', () => {
    const defs: AnyRoute[] = self.app.berth.modules.flatMap((m) => m.routes);
    const key = (d: AnyRoute) => `${d.method} ${d.url}`;
    const byId = defs.filter((d) => ['backup_policy', 'backup_run', 'backup_restore'].includes(resourceInfo(d.resource)?.kind ?? ''));
    assert.ok(byId.length >= 12);
    const forwarded = cloudRecordRoutes(defs);
    for (const d of byId) assert.ok(forwarded.includes(d), `${key(d)} is forwarded for cloud records`);
    // Of the backup routes, only those (the destinations are the org's, not a project's).
    const backupRoutes = forwarded.filter((d) => d.url.includes('/backup'));
    assert.deepEqual(backupRoutes.map(key).sort(), byId.map(key).sort());
    // Each checks something of the record's project, which is what is checked locally before forwarding.
    for (const d of byId) assert.ok((d.requires ?? []).some((r: { tag: string }) => r.tag.startsWith('project:')), key(d));
  });

  it('creates a policy (project-scoped, forwarded) and updates it by its id through the link', async () => {
    const { id: projectId, cloudId } = await cloudProject();
    const created = await self.api(team.member.token).post(`/api/projects/${projectId}/backup-policies`, { destinationId: cloudDest.id });
    assert.equal(created.status, 201, created.text);
    const policyId = created.body.data.id;
    assert.equal(created.body.data.projectId, cloudId, 'the cloud made it, under its own project id');
    assert.equal(await self.ctx.db.selectFrom('backupPolicies').select('id').where('id', '=', policyId).executeTakeFirst(), undefined);

    const n = seen.length;
    const upd = await self.api(team.member.token).patch(`/api/backup-policies/${policyId}`, { retainCount: 3, cronExpression: '0 3 * * *' });
    assert.equal(upd.status, 200, upd.text);
    assert.equal(upd.body.data.id, policyId);
    assert.equal(upd.body.data.retainCount, 3);
    assert.equal(upd.body.data.cronExpression, '0 3 * * *');
    const row = await cloud.ctx.db.selectFrom('backupPolicies').selectAll().where('id', '=', policyId).executeTakeFirstOrThrow();
    assert.equal(row.retainCount, 3);
    // The path went as it was, under the caller's request id.
    assert.deepEqual(seen.slice(n).map((s) => `${s.method} ${s.url}`), [`PATCH /api/backup-policies/${policyId}`]);
    assert.equal(upd.headers.get('x-request-id'), seen.at(-1)!.requestId);
    // A validation answer of the cloud comes back as it is.
    const bad = await self.api(team.member.token).patch(`/api/backup-policies/${policyId}`, { cronExpression: 'not a cron' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'INVALID_CRON');
  });

  it('the lookup route exists on the cloud only and answers the project of a record of the caller\'s org', async () => {
    const { cloudId, policyId } = await cloudPolicy();
    const ok = await cloud.api(cloudOwner.token).get(`/api/cloud/refs/policy/${policyId}`);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body.data, { projectId: cloudId });
    assert.equal((await cloud.api(cloudOwner.token).get('/api/cloud/refs/run/bkr_nothing00000000000000')).status, 404);
    assert.equal((await cloud.api(cloudOwner.token).get(`/api/cloud/refs/bogus/${policyId}`)).status, 400);
    assert.equal((await cloud.api().get(`/api/cloud/refs/policy/${policyId}`)).status, 401);
    const stranger = await createUser(cloud);
    const theirs = await cloud.api(stranger.token).get(`/api/cloud/refs/policy/${policyId}`);
    assert.equal(theirs.status, 404);
    const missing = await cloud.api(stranger.token).get('/api/cloud/refs/policy/bkp_nothing00000000000000');
    assert.deepEqual(stripId(theirs.body), stripId(missing.body));
    const restricted = await createUser(cloud, { orgId: cloudOwner.orgId, role: 'restricted' });
    assert.equal((await cloud.api(restricted.token).get(`/api/cloud/refs/policy/${policyId}`)).status, 403);
    assert.equal((await self.api(team.owner.token).get(`/api/cloud/refs/policy/${policyId}`)).status, 404, 'cloud only');
  });

  it('runs the policy, follows the run by its id until it succeeds, and reads its SSE stream to complete', async () => {
    const { cloudId, policyId } = await cloudPolicy();
    mkdirSync(volumeOf(cloudId), { recursive: true });
    writeFileSync(path.join(volumeOf(cloudId), 'state.txt'), 'version 1\n');
    const started = await self.api(team.member.token).post(`/api/backup-policies/${policyId}/run`);
    assert.equal(started.status, 201, started.text);
    const runId = started.body.data.runId;
    const run = await waitTerminal(self, team.member.token, `/api/backup-runs/${runId}`, 20_000);
    assert.equal(run.status, 'succeeded', JSON.stringify(run));
    assert.equal(run.projectId, cloudId);
    const direct = await cloud.api(cloudOwner.token).get(`/api/backup-runs/${runId}`);
    assert.deepEqual((await self.api(team.member.token).get(`/api/backup-runs/${runId}`)).body, direct.body);

    const sse = await readSse(`${self.url}/api/backup-runs/${runId}/stream`, team.member.token, 10_000);
    assert.equal(sse.status, 200);
    assert.match(String(sse.contentType), /text\/event-stream/);
    assert.equal(sse.events[0]?.event, 'snapshot');
    assert.equal(sse.events.at(-1)?.event, 'complete');
    assert.equal(sse.events.at(-1)?.data.id, runId);
    assert.equal(sse.events.at(-1)?.data.status, 'succeeded');
  });

  it('protects the run; cancelling a finished run is the cloud\'s own 409', async () => {
    const { runId } = await finishedRun();
    const p = await self.api(team.member.token).post(`/api/backup-runs/${runId}/protect`, { protected: true });
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.data.protected, true);
    const row = await cloud.ctx.db.selectFrom('backupRuns').selectAll().where('id', '=', runId).executeTakeFirstOrThrow();
    assert.equal(row.protected, 1);
    const c = await self.api(team.member.token).post(`/api/backup-runs/${runId}/cancel`);
    assert.equal(c.status, 409, c.text);
    assert.equal(c.body.error.code, 'CONFLICT');
  });

  it('checks local rights before anything is sent: the route\'s tag and the service\'s check on the project', async () => {
    const { projectId, policyId, runId } = await finishedRun({ retainCount: 3 });
    // The run is protected (on the cloud itself): the restricted member's unprotect below must not reach it.
    assert.equal((await cloud.api(cloudOwner.token).post(`/api/backup-runs/${runId}/protect`, { protected: true })).status, 200);
    const n = seen.length;
    const runsBefore = (await cloud.ctx.db.selectFrom('backupRuns').select('id').where('policyId', '=', policyId).execute()).length;
    // A member writes projects but does not administer them: prepare and delete need project:admin.
    const prep = await self.api(team.member.token).post(`/api/backup-runs/${runId}/restore/prepare`, {});
    assert.equal(prep.status, 403, prep.text);
    assert.equal(prep.body.error.code, 'FORBIDDEN');
    assert.equal((await self.api(team.member.token).delete(`/api/backup-policies/${policyId}`)).status, 403);
    // A restricted member without a grant on the project: 403 on every route.
    const r = self.api(team.restricted.token);
    for (const res of [
      await r.patch(`/api/backup-policies/${policyId}`, { retainCount: 1 }),
      await r.post(`/api/backup-policies/${policyId}/run`),
      await r.get(`/api/backup-runs/${runId}`),
      await r.get(`/api/backup-runs/${runId}/stream`),
      await r.post(`/api/backup-runs/${runId}/protect`, { protected: false }),
      await r.delete(`/api/backup-policies/${policyId}`),
    ]) {
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.error.code, 'FORBIDDEN');
    }
    assert.deepEqual(seen.slice(n), [], 'none of these reached the cloud');
    const pol = await cloud.ctx.db.selectFrom('backupPolicies').selectAll().where('id', '=', policyId).executeTakeFirstOrThrow();
    assert.equal(pol.retainCount, 3);
    assert.equal((await cloud.ctx.db.selectFrom('backupRuns').select('id').where('policyId', '=', policyId).execute()).length, runsBefore);
    assert.equal((await cloud.ctx.db.selectFrom('backupRuns').select('protected').where('id', '=', runId).executeTakeFirstOrThrow()).protected, 1);

    // A read grant on the local record of the cloud project: reads go through, writes do not.
    await createGrant(self, team.restricted, 'project', projectId, ['read']);
    const read = await r.get(`/api/backup-runs/${runId}`);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.data.id, runId);
    assert.equal((await r.patch(`/api/backup-policies/${policyId}`, { retainCount: 1 })).status, 403);
    assert.deepEqual(seen.slice(n).map((s) => `${s.method} ${s.url}`), [`GET /api/backup-runs/${runId}`]);
  });

  it('another local org gets 404, the same answer as an unknown id, and nothing is forwarded', async () => {
    const { policyId, runId } = await finishedRun();
    const n = seen.length;
    const o = self.api(otherOrg.token);
    const targets: Array<[string, string, unknown?]> = [
      ['PATCH', `/api/backup-policies/${policyId}`, { retainCount: 1 }],
      ['POST', `/api/backup-policies/${policyId}/run`],
      ['GET', `/api/backup-runs/${runId}`],
      ['GET', `/api/backup-runs/${runId}/stream`],
      ['POST', `/api/backup-runs/${runId}/restore/prepare`, {}],
      ['DELETE', `/api/backup-policies/${policyId}`],
    ];
    for (const [method, url, body] of targets) {
      const res = await o.request(method, url, body);
      assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
      const unknown = await o.request(method, url.replace(/(bkp|bkr)_[A-Za-z0-9]+/, (m) => `${m.slice(0, 4)}unknown${randomBytes(6).toString('hex')}`), body);
      assert.equal(unknown.status, 404);
      assert.deepEqual(stripId(res.body), stripId(unknown.body), 'another org\'s record and an unknown id answer the same body');
    }
    // Unknown ids of every kind, for the org that does have cloud projects.
    for (const url of ['/api/backup-runs/bkr_unknown0000000000000', '/api/backup-restores/bks_unknown0000000000000', '/api/backup-restores/bks_unknown0000000000000/stream']) {
      const res = await self.api(team.owner.token).get(url);
      assert.equal(res.status, 404, `${url}: ${res.text}`);
      assert.equal(res.body.error.code, 'NOT_FOUND');
    }
    assert.equal((await self.api(team.owner.token).delete('/api/backup-policies/bkp_unknown0000000000000')).status, 404);
    assert.deepEqual(seen.slice(n), []);
  });

  it('prepares a restore, reads it by its id, applies it and follows its stream to complete', async () => {
    const { cloudId, runId } = await finishedRun();
    const prep = await self.api(team.admin.token).post(`/api/backup-runs/${runId}/restore/prepare`, {});
    assert.equal(prep.status, 201, prep.text);
    const restoreId = prep.body.data.restoreId;
    assert.ok(prep.body.data.confirmationToken);
    const got = await self.api(team.member.token).get(`/api/backup-restores/${restoreId}`);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.data.id, restoreId);
    assert.equal(got.body.data.runId, runId);
    assert.equal(got.body.data.status, 'staged');
    // Applying needs project:admin locally, and the cloud checks the token.
    assert.equal((await self.api(team.member.token).post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken: prep.body.data.confirmationToken })).status, 403);
    const wrong = await self.api(team.admin.token).post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken: 'berth_rst_wrong' });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error.code, 'INVALID_CONFIRMATION_TOKEN');

    writeFileSync(path.join(volumeOf(cloudId), 'state.txt'), 'version 2\n');
    const applied = await self.api(team.admin.token).post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken: prep.body.data.confirmationToken });
    assert.equal(applied.status, 200, applied.text);
    const sse = await readSse(`${self.url}/api/backup-restores/${restoreId}/stream`, team.member.token, 15_000);
    assert.equal(sse.status, 200);
    assert.equal(sse.events[0]?.event, 'snapshot');
    assert.equal(sse.events.at(-1)?.event, 'complete');
    const done = await waitTerminal(self, team.member.token, `/api/backup-restores/${restoreId}`, 15_000);
    assert.equal(done.status, 'succeeded', JSON.stringify(done));
    assert.equal(readFileSync(path.join(volumeOf(cloudId), 'state.txt'), 'utf8'), 'version 1\n', 'the cloud project\'s volume is back as it was backed up');
    const cancel = await self.api(team.admin.token).post(`/api/backup-restores/${restoreId}/cancel`);
    assert.equal(cancel.status, 409, cancel.text);
  });

  it('deletes the policy by its id; afterwards the id is 404', async () => {
    const { policyId } = await cloudPolicy();
    const del = await self.api(team.admin.token).delete(`/api/backup-policies/${policyId}`);
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body.data, { id: policyId, deleted: true });
    assert.equal(await cloud.ctx.db.selectFrom('backupPolicies').select('id').where('id', '=', policyId).executeTakeFirst(), undefined);
    const again = await self.api(team.admin.token).patch(`/api/backup-policies/${policyId}`, { retainCount: 2 });
    assert.equal(again.status, 404, again.text);
  });

  // Closes the shared cloud: the last test that needs it.
  it('when the cloud does not answer: 503 cloud_unreachable; an org without cloud projects still gets its 404', async () => {
    const { runId } = await finishedRun();
    const staged = await cloud.api(cloudOwner.token).post(`/api/backup-runs/${runId}/restore/prepare`, {});
    assert.equal(staged.status, 201, staged.text);
    const restoreId = staged.body.data.restoreId;
    const loner = await createUser(self);
    cloud.app.server.closeAllConnections();
    await cloud.close();
    const res = await self.api(team.member.token).get(`/api/backup-runs/${runId}`);
    assert.equal(res.status, 503, res.text);
    assert.equal(res.body.error.code, 'cloud_unreachable');
    assert.ok(res.body.error.requestId);
    const s = await self.api(team.member.token).get(`/api/backup-restores/${restoreId}/stream`);
    assert.equal(s.status, 503);
    const none = await self.api(loner.token).get(`/api/backup-runs/${runId}`);
    assert.equal(none.status, 404, 'no round trip for an org that has nothing on the cloud');
  });

  it('neither server logged the link token or a restore confirmation token', () => {
    const all = logged.join('');
    assert.ok(all.length > 0, 'the servers logged something');
    assert.ok(!all.includes(cloudOwner.token), 'the link token is not in the logs');
    assert.ok(!/berth_rst_[A-Za-z0-9_-]{20,}/.test(all), 'no confirmation token is in the logs');
  });
});
