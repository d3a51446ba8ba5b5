import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { bundleDigest, bundleFromRows, readBundleRows } from '../../src/modules/cloud/bundle.js';
import { createLogger } from '../../src/lib/logger.js';
import { createProject, createTeam, createUser, type TestOrg, type TestUser } from '../support/factories.js';
import { startDnsStub, type DnsStub } from '../support/dns-stub.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { tgz } from '../uploads/targen.js';
import { probeModule, probeState, resetFirstChunk, type ProbeState } from './probe.js';

/** The digest of a project's full copy (config, env with secret values, domains, rules, ...) on a server. */
async function digestOn(server: TestServer, orgId: string, projectId: string): Promise<string | undefined> {
  const rows = await readBundleRows(server.ctx.db, orgId, projectId);
  return rows ? bundleDigest(bundleFromRows(server.ctx.keyring, rows)) : undefined;
}

/** Reads an SSE answer through a raw http request; resolves events as they arrive. */
function openStream(url: string, token: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; next(event: string): Promise<string>; closed: Promise<void>; close(): void }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (token) headers.authorization = `Bearer ${token}`;
    const req = http.get(url, { headers }, (res) => {
      let buf = '';
      const waiters: Array<{ event: string; resolve: (d: string) => void }> = [];
      const seen: Array<{ event: string; data: string }> = [];
      const flush = () => {
        for (const w of [...waiters]) {
          const i = seen.findIndex((s) => s.event === w.event);
          if (i >= 0) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(seen.splice(i, 1)[0]!.data);
          }
        }
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let idx: number;
        while ((idx = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          const ev = /^event: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (ev) seen.push({ event: ev, data: data ?? '' });
        }
        flush();
      });
      const closed = new Promise<void>((r) => {
        res.on('end', () => r());
        res.on('close', () => r());
        res.on('error', () => r());
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        next: (event) =>
          new Promise((r, j) => {
            waiters.push({ event, resolve: r });
            flush();
            setTimeout(() => j(new Error(`no ${event} event within 5 s`)), 5000).unref();
          }),
        closed,
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

describe('hosted cloud mode, a linked self-hosted instance, and project transfer both ways', () => {
  let cloud: TestServer;
  let self: TestServer;
  let cloudProbe: ProbeState;
  let selfProbe: ProbeState;
  let cloudOwner: TestUser;
  let team: TestOrg;
  let otherOrg: TestUser;
  /** The DNS the cloud checks domain TXT records with (a cloud instance always verifies domains). */
  let dns: DnsStub;
  const SECRET = `s3cr3t-${randomBytes(8).toString('hex')}`;
  /** Everything both servers log, at every level. */
  const logged: string[] = [];
  const sink = () => createLogger('trace', new Writable({ write: (chunk, _enc, cb) => (logged.push(String(chunk)), cb()) }));

  /**
   * A local project "Shop" of the team, set up through the API with config, env (one secret: SECRET),
   * a domain, a route rule, resources and a clone credential, each step checked. Answers its record.
   */
  async function shopProject(owner: TestUser = team.owner): Promise<{ id: string; location: string } & Record<string, any>> {
    const api = self.api(owner.token);
    const created = await api.post('/api/projects', { name: 'Shop', gitOwner: 'acme', gitRepo: 'shop', gitBranch: 'main', buildCommand: 'npm run build' });
    assert.equal(created.status, 201);
    const projectId = created.body.data.id;
    const env = await api.patch(`/api/projects/${projectId}/env`, {
      environment: 'production',
      upserts: [
        { key: 'API_SECRET', value: SECRET, isSecret: true },
        { key: 'PUBLIC_NAME', value: 'shop', isSecret: false },
      ],
      deletes: [],
    });
    assert.equal(env.status, 200, env.text);
    assert.equal((await api.post(`/api/projects/${projectId}/connect`, { domain: `shop-${randomBytes(3).toString('hex')}.example.com` })).status, 200);
    const rule = await api.post(`/api/projects/${projectId}/route-rules`, { kind: 'rate-limit', path: '/api', limit: 10, windowSeconds: 60 });
    assert.equal(rule.status, 201, rule.text);
    assert.equal((await api.patch(`/api/projects/${projectId}/resources`, { production: { cpuCores: 2, memoryMb: 1024 } })).status, 200);
    assert.equal((await api.patch(`/api/projects/${projectId}/clone-token`, { token: 'ghp_clonetoken', username: 'bot' })).status, 200);
    return created.body.data;
  }

  /** An unrelated project of the cloud org that already holds `id` there (so a transfer of `id` must pick another). */
  async function squatOnCloud(id: string): Promise<void> {
    const now = new Date().toISOString();
    await cloud.ctx.db
      .insertInto('projects')
      .values({
        id, orgId: cloudOwner.orgId, name: 'squatter', slug: `squat-${randomBytes(3).toString('hex')}`, status: 'enabled', location: 'local',
        framework: null, installCommand: null, buildCommand: null, startCommand: null, outputDirectory: null, rootDirectory: null, port: 3000,
        packageManager: null, runtime: null, nodeVersion: null, sourceType: 'none', gitProvider: null, gitOwner: null, gitRepo: null, gitBranch: null,
        localPath: null, sleepMode: 'always_on', autoDeploy: 0, webhookDomain: null, webhookId: null, resources: '{}', createdAt: now, updatedAt: now,
      })
      .execute();
  }

  /** A `shopProject` moved to the cloud: its local id and its cloud copy's. */
  async function cloudShop(owner: TestUser = team.owner): Promise<{ projectId: string; cloudId: string }> {
    const p = await shopProject(owner);
    const t = await self.api(owner.token).post(`/api/projects/${p.id}/transfer/to-cloud`);
    assert.equal(t.status, 200, t.text);
    return { projectId: p.id, cloudId: t.body.data.cloudProjectId };
  }

  /** Changes made on a cloud copy by the cloud org itself: renamed "Shop Cloud", and env ADDED_ON_CLOUD added. */
  async function changeOnCloud(cloudId: string): Promise<void> {
    const api = cloud.api(cloudOwner.token);
    const renamed = await api.patch(`/api/projects/${cloudId}`, { name: 'Shop Cloud' });
    assert.equal(renamed.status, 200, renamed.text);
    const env = await api.patch(`/api/projects/${cloudId}/env`, { environment: 'production', upserts: [{ key: 'ADDED_ON_CLOUD', value: 'yes', isSecret: false }], deletes: [] });
    assert.equal(env.status, 200, env.text);
  }

  before(async () => {
    cloudProbe = probeState();
    selfProbe = probeState();
    dns = await startDnsStub();
    cloud = await startTestServer({ flags: { mode: 'cloud' }, env: { BERTH_DNS_SERVERS: dns.server }, build: { modules: [probeModule(cloudProbe)], logger: sink() } });
    cloudOwner = await createUser(cloud);
    self = await startTestServer({
      env: { BERTH_CLOUD_URL: cloud.url, BERTH_CLOUD_TOKEN: cloudOwner.token },
      build: { modules: [probeModule(selfProbe)], logger: sink() },
    });
    team = await createTeam(self);
    otherOrg = await createUser(self);
  });
  after(async () => {
    await self?.close();
    await cloud?.close().catch(() => {});
    await dns?.close();
  });

  it('the cloud answers 404 on every self-hosted-only route, and the seed\'s self-hosted-only routes carry the flag', async () => {
    const flagged = cloud.app.berth.routes.filter((r) => r.selfHostedOnly);
    const names = new Set(flagged.map((r) => `${r.method} ${r.url}`));
    for (const must of [
      'GET /api/projects/local',
      'POST /api/projects/scan',
      'POST /api/projects/import',
      'POST /api/projects/folder/upload/:sessionId',
      'POST /api/projects/:id/transfer/to-cloud',
      'POST /api/projects/:id/transfer/to-self-hosted',
      'GET /api/projects/:id/route-rules',
      'POST /api/projects/:id/route-rules',
      'PATCH /api/projects/:id/route-rules/:ruleId',
      'DELETE /api/projects/:id/route-rules/:ruleId',
    ]) {
      assert.ok(names.has(must), `${must} is self-hosted only`);
    }
    const p = (await cloud.api(cloudOwner.token).post('/api/projects', { name: 'cloud-native' })).body.data;
    for (const r of flagged) {
      const url = r.url.replace(/:id\b/, p.id).replace(/:([A-Za-z]+)/g, 'x1');
      // Without a credential too: the route does not exist there at all.
      for (const client of [cloud.api(cloudOwner.token), cloud.api()]) {
        const res = await client.request(r.method, url, r.method === 'GET' || r.method === 'DELETE' ? undefined : {});
        assert.equal(res.status, 404, `${r.method} ${r.url}`);
        assert.equal(res.body.error.code, 'NOT_FOUND');
      }
    }
  });

  it('health reports the link: linked and reachable on the self-hosted side, never the token', async () => {
    const h = await self.api().get('/api/health');
    assert.equal(h.status, 200);
    assert.equal(h.body.data.status, 'ok');
    assert.equal(h.body.data.mode, 'self-hosted');
    assert.deepEqual(h.body.data.cloud, { linked: true, reachable: true });
    assert.ok(!h.text.includes(cloudOwner.token));
    const c = await cloud.api().get('/api/health');
    assert.equal(c.body.data.mode, 'cloud');
    assert.deepEqual(c.body.data.cloud, { linked: false, reachable: false });
  });

  it('sets up a local project with config, env secrets, a domain, a route rule, resources and a clone credential', async () => {
    const shop = await shopProject();
    assert.equal(shop.location, 'local');
  });

  it('transfer/to-cloud needs project:admin: 403 for a member, 404 for another org, before anything reaches the cloud', async () => {
    const { id: projectId } = await shopProject();
    const before = await cloud.ctx.db.selectFrom('projects').select('id').where('orgId', '=', cloudOwner.orgId).execute();
    const m = await self.api(team.member.token).post(`/api/projects/${projectId}/transfer/to-cloud`);
    assert.equal(m.status, 403);
    const o = await self.api(otherOrg.token).post(`/api/projects/${projectId}/transfer/to-cloud`);
    assert.equal(o.status, 404);
    const r = await self.api(team.restricted.token).post(`/api/projects/${projectId}/transfer/to-cloud`);
    assert.equal(r.status, 403);
    const afterRows = await cloud.ctx.db.selectFrom('projects').select('id').where('orgId', '=', cloudOwner.orgId).execute();
    assert.equal(afterRows.length, before.length);
  });

  it('a transfer that fails after the cloud made its copy leaves the local project as it was and nothing on the cloud', async () => {
    const { id: projectId } = await shopProject();
    const digest = await digestOn(self, team.orgId, projectId);
    const cloudBefore = await cloud.ctx.db.selectFrom('projects').select('id').execute();
    cloudProbe.failNextExport = true;
    const res = await self.api(team.owner.token).post(`/api/projects/${projectId}/transfer/to-cloud`);
    assert.equal(res.status, 503, res.text);
    assert.equal(res.body.error.code, 'cloud_unreachable');
    const row = await self.ctx.db.selectFrom('projects').selectAll().where('id', '=', projectId).executeTakeFirstOrThrow();
    assert.equal(row.location, 'local');
    assert.equal(await digestOn(self, team.orgId, projectId), digest);
    const cloudAfter = await cloud.ctx.db.selectFrom('projects').select('id').execute();
    assert.deepEqual(cloudAfter.map((r) => r.id).sort(), cloudBefore.map((r) => r.id).sort());
    assert.equal(await self.ctx.db.selectFrom('cloudLinks').selectAll().where('projectId', '=', projectId).executeTakeFirst(), undefined);
    const audit = await self.ctx.db.selectFrom('auditEvents').selectAll().where('resourceId', '=', projectId).where('action', '=', 'project.transfer.to_cloud.failed').execute();
    assert.equal(audit.length, 1);
    assert.ok(!JSON.stringify(audit).includes(SECRET));
  });

  it('a transfer the cloud refuses (a domain verified there by another project) changes nothing on either side', async () => {
    const other = (await self.api(team.owner.token).post('/api/projects', { name: 'Blog' })).body.data;
    const domain = `blog-${randomBytes(3).toString('hex')}.example.com`;
    assert.equal((await self.api(team.owner.token).post(`/api/projects/${other.id}/connect`, { domain })).status, 200);
    const holder = (await cloud.api(cloudOwner.token).post('/api/projects', { name: 'holder' })).body.data;
    const claim = await cloud.api(cloudOwner.token).post(`/api/projects/${holder.id}/domains`, { domain });
    assert.equal(claim.status, 201, claim.text);
    dns.txt.set(`_berth-challenge.${domain}`, [claim.body.data.verification.value]);
    const verified = await cloud.api(cloudOwner.token).post(`/api/projects/${holder.id}/domains/${domain}/verify`);
    assert.equal(verified.status, 200, verified.text);
    const count = async () => (await cloud.ctx.db.selectFrom('projects').select('id').execute()).length;
    const n = await count();
    const res = await self.api(team.owner.token).post(`/api/projects/${other.id}/transfer/to-cloud`);
    assert.equal(res.status, 409, res.text);
    assert.equal(res.body.error.code, 'CONFLICT');
    assert.match(res.body.error.message, /domain/);
    assert.equal(await count(), n);
    assert.equal((await self.api(team.owner.token).get(`/api/projects/${other.id}`)).body.data.location, 'local');
  });

  it('transfer/to-cloud copies config, env secrets, domains, route rules, resources and clone credential, verifies, and flips the record', async () => {
    const { id: projectId } = await shopProject();
    // An unrelated project on the cloud already holds this id: the cloud copy gets another id,
    // and the link maps one to the other.
    await squatOnCloud(projectId);
    const digest = await digestOn(self, team.orgId, projectId);
    const res = await self.api(team.owner.token).post(`/api/projects/${projectId}/transfer/to-cloud`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.location, 'cloud');
    assert.equal(res.body.data.verified, true);
    assert.ok(!res.text.includes(SECRET));
    const cloudId = res.body.data.cloudProjectId;
    assert.notEqual(cloudId, projectId, 'the squatted id was not reused');
    assert.equal(res.body.data.transferred.secrets, 1);
    // The cloud's copy, secrets included, hashes the same as the local one did.
    assert.equal(await digestOn(cloud, cloudOwner.orgId, cloudId), digest);
    // A domain's proof does not travel: the cloud verifies the copied domain itself (TXT record).
    const cloudDomains = (await cloud.api(cloudOwner.token).get(`/api/projects/${cloudId}/domains`)).body.data;
    assert.deepEqual(cloudDomains.map((d: any) => [d.primary, d.verified, d.verification?.type]), [[true, false, 'TXT']]);
    const cloudRow = await cloud.ctx.db.selectFrom('envVars').selectAll().where('projectId', '=', cloudId).where('key', '=', 'API_SECRET').executeTakeFirstOrThrow();
    assert.ok(!cloudRow.value.includes(SECRET), 'the cloud keeps the secret encrypted under its own key');
    const local = await self.ctx.db.selectFrom('projects').selectAll().where('id', '=', projectId).executeTakeFirstOrThrow();
    assert.equal(local.location, 'cloud');
    const link = await self.ctx.db.selectFrom('cloudLinks').selectAll().where('projectId', '=', projectId).executeTakeFirstOrThrow();
    assert.equal(link.cloudProjectId, cloudId);
    const audit = await self.ctx.db.selectFrom('auditEvents').selectAll().where('resourceId', '=', projectId).where('action', '=', 'project.transfer.to_cloud').execute();
    assert.equal(audit.length, 1);
    assert.ok(!JSON.stringify(audit).includes(SECRET));
    const cloudAudit = await cloud.ctx.db.selectFrom('auditEvents').selectAll().where('resourceId', '=', cloudId).execute();
    assert.ok(cloudAudit.some((a) => a.action === 'project.import'));
    assert.ok(!JSON.stringify(cloudAudit).includes(SECRET));
  });

  it('a transfer to where the project already is is 409', async () => {
    const { projectId } = await cloudShop();
    const again = await self.api(team.owner.token).post(`/api/projects/${projectId}/transfer/to-cloud`);
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'CONFLICT');
    const local = (await self.api(team.owner.token).post('/api/projects', { name: 'stay' })).body.data;
    const back = await self.api(team.owner.token).post(`/api/projects/${local.id}/transfer/to-self-hosted`);
    assert.equal(back.status, 409);
  });

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

  it('transfer/to-self-hosted brings the project back with its secrets intact and deletes the cloud copy after verifying', async () => {
    const { projectId, cloudId } = await cloudShop();
    await changeOnCloud(cloudId);
    const link = await self.ctx.db.selectFrom('cloudLinks').selectAll().where('projectId', '=', projectId).executeTakeFirstOrThrow();
    const claimBefore = await self.ctx.db.selectFrom('domains').selectAll().where('projectId', '=', projectId).executeTakeFirstOrThrow();
    const cloudDigest = await digestOn(cloud, cloudOwner.orgId, link.cloudProjectId);
    assert.equal((await self.api(team.member.token).post(`/api/projects/${projectId}/transfer/to-self-hosted`)).status, 403);
    const res = await self.api(team.admin.token).post(`/api/projects/${projectId}/transfer/to-self-hosted`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.location, 'local');
    assert.equal(res.body.data.cloudCopyDeleted, true);
    assert.ok(!res.text.includes(SECRET));
    assert.equal(await digestOn(self, team.orgId, projectId), cloudDigest, 'the local copy equals the cloud copy, secret values included');
    const rows = await readBundleRows(self.ctx.db, team.orgId, projectId);
    const secret = bundleFromRows(self.ctx.keyring, rows!).env.find((e) => e.key === 'API_SECRET')!;
    assert.equal(secret.value, SECRET);
    assert.equal(secret.isSecret, true);
    assert.equal(rows!.project.name, 'Shop Cloud');
    assert.equal(rows!.project.location, 'local');
    assert.equal(await digestOn(cloud, cloudOwner.orgId, link.cloudProjectId), undefined, 'the cloud copy is gone');
    assert.equal(await self.ctx.db.selectFrom('cloudLinks').selectAll().where('projectId', '=', projectId).executeTakeFirst(), undefined);
    const env = await self.api(team.member.token).get(`/api/projects/${projectId}/env`);
    assert.equal(env.status, 200);
    assert.ok(env.body.data.some((v: any) => v.key === 'ADDED_ON_CLOUD'), 'changes made on the cloud came back');
    // The domain this instance had verified for the project stays verified here (the same claim).
    const claimAfter = await self.ctx.db.selectFrom('domains').selectAll().where('projectId', '=', projectId).executeTakeFirstOrThrow();
    assert.deepEqual([claimAfter.domain, claimAfter.verification, claimAfter.verifiedAt], [claimBefore.domain, claimBefore.verification, claimBefore.verifiedAt]);
    const audit = await self.ctx.db.selectFrom('auditEvents').selectAll().where('resourceId', '=', projectId).where('action', '=', 'project.transfer.to_self_hosted').execute();
    assert.equal(audit.length, 1);
  });

  it('the export a transfer reads is sealed: the cloud never answers a secret in clear, and it does not exist on a self-hosted instance', async () => {
    const p = (await cloud.api(cloudOwner.token).post('/api/projects', { name: 'sealed' })).body.data;
    await cloud.api(cloudOwner.token).patch(`/api/projects/${p.id}/env`, { environment: 'production', upserts: [{ key: 'K', value: SECRET, isSecret: true }], deletes: [] });
    const { newRecipientKey } = await import('../../src/modules/cloud/seal.js');
    const key = newRecipientKey();
    const res = await cloud.api(cloudOwner.token).post(`/api/projects/${p.id}/export`, { recipientKey: key.publicKey });
    assert.equal(res.status, 200, res.text);
    assert.ok(!res.text.includes(SECRET));
    const member = await createUser(cloud, { orgId: cloudOwner.orgId, role: 'member' });
    assert.equal((await cloud.api(member.token).post(`/api/projects/${p.id}/export`, { recipientKey: key.publicKey })).status, 403);
    const local = (await self.api(team.owner.token).post('/api/projects', { name: 'no-export' })).body.data;
    assert.equal((await self.api(team.owner.token).post(`/api/projects/${local.id}/export`, { recipientKey: key.publicKey })).status, 404);
    assert.equal((await self.api(team.owner.token).post('/api/projects/import-bundle', { bundle: {} })).status, 404);
    assert.equal((await self.api().post(`/api/projects/${local.id}/export`, {})).status, 404, 'cloud only: 404 before authentication');
    assert.equal((await cloud.api(member.token).post('/api/projects/import-bundle', { bundle: {} })).status, 403, 'import needs project:admin');
    const badBundle = await cloud.api(cloudOwner.token).post('/api/projects/import-bundle', { bundle: { version: 1 } });
    assert.equal(badBundle.status, 400);
    assert.equal(badBundle.body.error.field, 'bundle.project');
  });

  it('the cloud\'s folder-upload session hands out an upload target on the cloud itself (the relay does not exist there)', async () => {
    const archive = tgz([
      { path: 'package.json', data: JSON.stringify({ name: 'web', scripts: { start: 'node server.js' } }) },
      { path: 'server.js', data: 'console.log(1)\n' },
    ]);
    const session = await cloud.api(cloudOwner.token).post('/api/projects/folder/session', { name: 'web' });
    assert.equal(session.status, 201, session.text);
    const target = session.body.data;
    assert.ok(target.url.startsWith(`${cloud.url}/api/uploads/`), target.url);
    const relay = await cloud.api().post(`/api/projects/folder/upload/${target.sessionId}`, archive, target.headers);
    assert.equal(relay.status, 404);
    const up = await fetch(target.url, { method: target.method, headers: target.headers, body: new Uint8Array(archive) });
    const upBody = (await up.json()) as any;
    assert.equal(up.status, 200, JSON.stringify(upBody));
    assert.equal(upBody.data.sha256, createHash('sha256').update(archive).digest('hex'));
    const scan = await cloud.api(cloudOwner.token).post(`/api/projects/folder/scan/${target.sessionId}`);
    assert.equal(scan.status, 200, scan.text);
    // A self-hosted instance has no such route.
    assert.equal((await self.api().post(`/api/uploads/${target.sessionId}`, archive, target.headers)).status, 404);
    const selfSession = (await self.api(team.owner.token).post('/api/projects/folder/session', {})).body.data;
    assert.ok(selfSession.url.startsWith(`${self.url}/api/projects/folder/upload/`));
  });

  it('transfers carry a folder-upload project\'s source archive both ways, verified by its hash', async () => {
    const archive = tgz([{ path: 'index.html', data: `<h1>${randomBytes(8).toString('hex')}</h1>` }]);
    const sha = createHash('sha256').update(archive).digest('hex');
    const api = self.api(team.owner.token);
    const session = (await api.post('/api/projects/folder/session', { name: 'site' })).body.data;
    const up = await fetch(session.url, { method: 'POST', headers: session.headers, body: new Uint8Array(archive) });
    assert.equal(up.status, 200);
    const ensured = await api.post('/api/projects/ensure', { name: 'Site', gitProvider: 'upload', sessionId: session.sessionId });
    assert.equal(ensured.status, 201, ensured.text);
    const p = ensured.body.data;
    assert.equal(p.source.type, 'upload');
    const before = await digestOn(self, team.orgId, p.id);

    const t = await api.post(`/api/projects/${p.id}/transfer/to-cloud`);
    assert.equal(t.status, 200, t.text);
    const cloudId = t.body.data.cloudProjectId;
    const { currentForProject } = await import('../../src/modules/uploads/uploads.store.js');
    assert.equal((await currentForProject(cloud.ctx.db, cloudOwner.orgId, cloudId))?.sha256, sha);
    assert.equal(await digestOn(cloud, cloudOwner.orgId, cloudId), before, 'config kept as it was, archive hash included');

    const b = await api.post(`/api/projects/${p.id}/transfer/to-self-hosted`);
    assert.equal(b.status, 200, b.text);
    assert.equal(await digestOn(self, team.orgId, p.id), before);
    assert.equal((await currentForProject(self.ctx.db, team.orgId, p.id))?.sha256, sha);
  });

  it('deleting a cloud project through the link deletes the cloud copy and the local record', async () => {
    const p = (await self.api(team.owner.token).post('/api/projects', { name: 'Gone' })).body.data;
    const t = await self.api(team.owner.token).post(`/api/projects/${p.id}/transfer/to-cloud`);
    assert.equal(t.status, 200, t.text);
    const cloudId = t.body.data.cloudProjectId;
    const del = await self.api(team.owner.token).delete(`/api/projects/${p.id}`);
    assert.equal(del.status, 200, del.text);
    assert.equal(await digestOn(cloud, cloudOwner.orgId, cloudId), undefined);
    assert.equal((await self.api(team.owner.token).get(`/api/projects/${p.id}`)).status, 404);
  });

  it('when the cloud goes down mid-way: streams are cut, forwarded routes answer 503 cloud_unreachable, home falls back to local projects, no local data is lost', async () => {
    // A local project of the team, and one that stays on the cloud for this.
    const { id: projectId } = await shopProject();
    const p = (await self.api(team.owner.token).post('/api/projects', { name: 'Away' })).body.data;
    await self.api(team.owner.token).patch(`/api/projects/${p.id}/env`, { environment: 'production', upserts: [{ key: 'K', value: SECRET, isSecret: true }], deletes: [] });
    assert.equal((await self.api(team.owner.token).post(`/api/projects/${p.id}/transfer/to-cloud`)).status, 200);
    const localDigestOfStub = await digestOn(self, team.orgId, p.id);
    const s = await openStream(`${self.url}/api/projects/${p.id}/probe/events`, team.member.token);
    await s.next('hello');

    cloud.app.server.closeAllConnections();
    await cloud.close();
    await s.closed; // the stream through the link ends when the cloud goes away

    const env = await self.api(team.member.token).get(`/api/projects/${p.id}/env`);
    assert.equal(env.status, 503);
    assert.equal(env.body.error.code, 'cloud_unreachable');
    assert.ok(env.body.error.requestId);
    assert.match(env.body.error.message, /cloud/);
    const write = await self.api(team.member.token).patch(`/api/projects/${p.id}`, { name: 'nope' });
    assert.equal(write.status, 503);
    const back = await self.api(team.owner.token).post(`/api/projects/${p.id}/transfer/to-self-hosted`);
    assert.equal(back.status, 503);
    assert.equal(back.body.error.code, 'cloud_unreachable');

    const started = Date.now();
    const home = await self.api(team.member.token).get('/api/projects/home');
    assert.equal(home.status, 200);
    assert.equal(home.body.data.cloudUnreachable, true);
    assert.ok(Date.now() - started < 4000);
    assert.ok(home.body.data.projects.some((x: any) => x.id === projectId && x.location === 'local'));
    assert.ok(home.body.data.projects.some((x: any) => x.id === p.id && x.location === 'cloud'));

    const health = await self.api().get('/api/health');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body.data.cloud, { linked: true, reachable: false });

    // This instance has no GitHub App of its own: it relies on the cloud's, which does not answer.
    const connect = await self.api(team.owner.token).post('/api/gitprovider/connect', {});
    assert.equal(connect.status, 503, connect.text);
    assert.equal(connect.body.error.code, 'cloud_unreachable');
    const gstatus = await self.api(team.owner.token).get('/api/gitprovider/status');
    assert.equal(gstatus.status, 200);
    assert.equal(gstatus.body.data.cloudUnreachable, true);

    // Local projects work as before; the cloud project's local record is untouched.
    const local = await self.api(team.member.token).get(`/api/projects/${projectId}/env`);
    assert.equal(local.status, 200);
    const row = await self.ctx.db.selectFrom('projects').selectAll().where('id', '=', p.id).executeTakeFirstOrThrow();
    assert.equal(row.location, 'cloud');
    assert.equal(await digestOn(self, team.orgId, p.id), localDigestOfStub);
  });

  it('neither server ever logged the link token or a secret value', () => {
    assert.ok(logged.length > 0, 'the servers logged something');
    const all = logged.join('');
    assert.ok(!all.includes(cloudOwner.token), 'the link token is not in the logs');
    assert.ok(!all.includes(SECRET), 'no secret value is in the logs');
  });
});
