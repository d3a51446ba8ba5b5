import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { createUser, type TestOrg, type TestUser } from '../support/factories.js';
import type { DnsStub } from '../support/dns-stub.js';
import type { TestServer } from '../support/harness.js';
import { useCloudPair, digestOn } from '../support/cloud-pair.js';
import { type ProbeState } from './probe.js';

/**
 * Hosted cloud mode and moving a self-hosted project to the cloud (docs/cloud.md): two real servers,
 * a cloud and a self-hosted instance linked to it (test/support/cloud-pair.ts); each case makes its own project.
 */

describe('hosted cloud mode and transfer/to-cloud', () => {
  const pair = useCloudPair();
  const { SECRET, shopProject, squatOnCloud, cloudShop } = pair;
  let cloud: TestServer;
  let self: TestServer;
  let cloudProbe: ProbeState;
  let cloudOwner: TestUser;
  let team: TestOrg;
  let otherOrg: TestUser;
  let dns: DnsStub;
  before(() => ({ cloud, self, cloudProbe, cloudOwner, team, otherOrg, dns } = pair));

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
});
