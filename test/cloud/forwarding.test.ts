import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { before, describe, it } from 'node:test';
import { createProject, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import type { TestServer } from '../support/harness.js';
import { useCloudPair, digestOn, openStream } from '../support/cloud-pair.js';
import { resetFirstChunk, type ProbeState } from './probe.js';

/**
 * Requests for a project that lives on the cloud, sent to the self-hosted instance it came from, are
 * forwarded through the link (docs/cloud.md, Forwarding); each case moves a project of its own to the cloud.
 */

describe('a linked instance forwards the routes of a cloud project to the cloud', () => {
  const pair = useCloudPair();
  const { SECRET, cloudShop, changeOnCloud } = pair;
  let cloud: TestServer;
  let self: TestServer;
  let cloudProbe: ProbeState;
  let cloudOwner: TestUser;
  let team: TestOrg;
  let otherOrg: TestUser;
  before(() => ({ cloud, self, cloudProbe, cloudOwner, team, otherOrg } = pair));

  it('forwards reads of a cloud project to the cloud: the answer comes back unchanged, secrets still masked', async () => {
    const { projectId } = await cloudShop();
    const res = await self.api(team.member.token).get(`/api/projects/${projectId}/env?environment=production`);
    assert.equal(res.status, 200, res.text);
    const byKey = Object.fromEntries(res.body.data.map((v: any) => [v.key, v]));
    assert.equal(byKey.API_SECRET.value, '********');
    assert.equal(byKey.PUBLIC_NAME.value, 'shop');
    assert.ok(!res.text.includes(SECRET));
    const rec = await self.api(team.member.token).get(`/api/projects/${projectId}`);
    assert.equal(rec.status, 200);
    assert.equal(rec.body.data.name, 'Shop');
    const direct = await cloud.api(cloudOwner.token).get(`/api/projects/${rec.body.data.id}`);
    assert.equal(direct.status, 200);
    assert.deepEqual(rec.body.data, direct.body.data);
  });

  it('forwards writes: the change lands on the cloud, the local record is left alone', async () => {
    const { projectId } = await cloudShop();
    const link = await self.ctx.db.selectFrom('cloudLinks').selectAll().where('projectId', '=', projectId).executeTakeFirstOrThrow();
    const localBefore = await digestOn(self, team.orgId, projectId);
    const res = await self.api(team.member.token).patch(`/api/projects/${projectId}/env`, {
      environment: 'production',
      upserts: [{ key: 'ADDED_ON_CLOUD', value: 'yes', isSecret: false }],
      deletes: [],
    });
    assert.equal(res.status, 200, res.text);
    const onCloud = await cloud.ctx.db.selectFrom('envVars').select('key').where('projectId', '=', link.cloudProjectId).execute();
    assert.ok(onCloud.some((r) => r.key === 'ADDED_ON_CLOUD'));
    assert.equal(await digestOn(self, team.orgId, projectId), localBefore);
    const renamed = await self.api(team.member.token).patch(`/api/projects/${projectId}`, { name: 'Shop Cloud' });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.data.name, 'Shop Cloud');
    const bad = await self.api(team.member.token).patch(`/api/projects/${projectId}/resources`, { production: { cpuCores: 9 } });
    assert.equal(bad.status, 400, 'the cloud\'s validation answer comes back as it is');
    assert.equal(bad.body.error.field, 'production.cpuCores');
    // routing/retry asks the cloud to sync the free domain again (no rebuild).
    const retry = await self.api(team.member.token).post(`/api/projects/${projectId}/routing/retry`);
    assert.ok(retry.status === 200 || retry.status === 201, retry.text);
    const attempts = await cloud.ctx.db.selectFrom('routingAttempts').selectAll().where('projectId', '=', link.cloudProjectId).execute();
    assert.equal(attempts.length, 1);
    assert.equal(await self.ctx.db.selectFrom('routingAttempts').selectAll().where('projectId', '=', projectId).execute().then((r) => r.length), 0);
  });

  it('checks local rights before anything is sent: another org gets 404 and a restricted member 403, and the cloud sees nothing', async () => {
    const { projectId } = await cloudShop();
    const hits = cloudProbe.hits;
    const o = await self.api(otherOrg.token).post(`/api/projects/${projectId}/probe/upload`, 'abc', { 'content-type': 'application/octet-stream' });
    assert.equal(o.status, 404);
    const r = await self.api(team.restricted.token).post(`/api/projects/${projectId}/probe/upload`, 'abc', { 'content-type': 'application/octet-stream' });
    assert.equal(r.status, 403);
    const env = await self.api(team.restricted.token).get(`/api/projects/${projectId}/env`);
    assert.equal(env.status, 403);
    const del = await self.api(team.member.token).delete(`/api/projects/${projectId}`);
    assert.equal(del.status, 403, 'delete needs project:admin locally');
    assert.equal(cloudProbe.hits, hits);
  });

  it('streams an upload through without buffering it, with the link\'s credential and the caller\'s request id', async () => {
    const { projectId } = await cloudShop();
    resetFirstChunk(cloudProbe);
    const total = 24 * 1024 * 1024;
    const chunk = randomBytes(1024 * 1024);
    const hash = createHash('sha256');
    const url = new URL(`${self.url}/api/projects/${projectId}/probe/upload`);
    const answer = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = http.request(
        url,
        { method: 'POST', headers: { authorization: `Bearer ${team.member.token}`, 'content-type': 'application/gzip', 'transfer-encoding': 'chunked' } },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      (async () => {
        req.write(chunk);
        hash.update(chunk);
        // The cloud sees the first bytes while the rest has not even been sent: nothing waits for the whole body.
        await Promise.race([cloudProbe.firstChunk, new Promise((_, j) => setTimeout(() => j(new Error('the first chunk did not reach the cloud before the upload ended')), 5000))]);
        for (let sent = chunk.length; sent < total; sent += chunk.length) {
          if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
          hash.update(chunk);
        }
        req.end();
      })().catch(reject);
    });
    const res = await answer;
    assert.equal(res.status, 201, res.body);
    const data = JSON.parse(res.body).data;
    assert.equal(data.bytes, total);
    assert.equal(data.sha256, hash.digest('hex'));
    assert.equal(data.contentType, 'application/gzip');
    assert.equal(res.headers['x-probe'], 'cloud');
    assert.equal(res.headers['x-request-id'], cloudProbe.lastRequestId, 'the cloud served the request under the caller\'s request id');
    assert.equal(cloudProbe.lastAuthorization, `Bearer ${cloudOwner.token}`, 'the link\'s credential, not the caller\'s');
    const link = await self.ctx.db.selectFrom('cloudLinks').selectAll().where('projectId', '=', projectId).executeTakeFirstOrThrow();
    assert.equal(data.projectId, link.cloudProjectId, 'the local id was mapped to the cloud id');
  });

  it('streams an SSE answer through as events happen', async () => {
    const { projectId } = await cloudShop();
    const s = await openStream(`${self.url}/api/projects/${projectId}/probe/events`, team.member.token);
    assert.equal(s.status, 200);
    assert.match(String(s.headers['content-type']), /text\/event-stream/);
    await s.next('hello');
    const sse = cloudProbe.streams.at(-1)!;
    sse.send('tick', { n: 1 });
    assert.equal(JSON.parse(await s.next('tick')).n, 1);
    sse.send('tick', { n: 2 });
    assert.equal(JSON.parse(await s.next('tick')).n, 2);
    sse.close();
    await s.closed;
  });

  it('forwards the real per-project streams and the project-scoped backup routes', async () => {
    const { projectId } = await cloudShop();
    const policies = await self.api(team.member.token).get(`/api/projects/${projectId}/backup-policies`);
    const link = await self.ctx.db.selectFrom('cloudLinks').selectAll().where('projectId', '=', projectId).executeTakeFirstOrThrow();
    const direct = await cloud.api(cloudOwner.token).get(`/api/projects/${link.cloudProjectId}/backup-policies`);
    assert.equal(policies.status, direct.status, policies.text);
    assert.deepEqual(policies.body, direct.body);
    const runs = await self.api(team.member.token).get(`/api/projects/${projectId}/backup-runs`);
    assert.equal(runs.status, 200, runs.text);
    // Runtime log stream (SSE) of the cloud project, through the link.
    const logs = await openStream(`${self.url}/api/projects/${projectId}/logs/stream`, team.member.token);
    assert.equal(logs.status, 200);
    assert.match(String(logs.headers['content-type']), /text\/event-stream/);
    logs.close();
    // The request-log stream takes a token minted by the instance holding the project (the cloud).
    const minted = await self.api(team.member.token).get(`/api/projects/${projectId}/server-logs/stream-token`);
    assert.equal(minted.status, 200, minted.text);
    const reqLogs = await openStream(`${self.url}/api/projects/${projectId}/server-logs/stream?token=${encodeURIComponent(minted.body.data.token)}`, '');
    assert.equal(reqLogs.status, 200);
    assert.match(String(reqLogs.headers['content-type']), /text\/event-stream/);
    reqLogs.close();
    const forged = await self.api().get(`/api/projects/${projectId}/server-logs/stream?token=nope`);
    assert.ok(forged.status === 401 || forged.status === 404, `a bad token is refused by the cloud (${forged.status})`);
  });

  it('home merges local and cloud projects with location on each', async () => {
    // A team org of its own, so that its home holds just this test's projects: one on the cloud, two local.
    const owner = await createUser(self, { team: true });
    const member = await createUser(self, { orgId: owner.orgId, role: 'member', noPassword: true });
    const { projectId, cloudId } = await cloudShop(owner);
    await changeOnCloud(cloudId);
    await createProject(self, owner);
    await createProject(self, owner);
    const res = await self.api(member.token).get('/api/projects/home');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.cloudUnreachable, false);
    const shop = res.body.data.projects.find((p: any) => p.id === projectId);
    assert.ok(shop, 'the cloud project is listed under its local id');
    assert.equal(shop.location, 'cloud');
    assert.equal(shop.name, 'Shop Cloud', 'with the cloud\'s live record');
    const locals = res.body.data.projects.filter((p: any) => p.id !== projectId);
    assert.ok(locals.length >= 2);
    for (const p of locals) assert.equal(p.location, 'local');
    const other = await self.api(otherOrg.token).get('/api/projects/home');
    assert.ok(!other.body.data.projects.some((p: any) => p.id === projectId), 'another local org never sees it');
  });
});
