import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { bundleFromRows, readBundleRows } from '../../src/modules/cloud/bundle.js';
import { tgz } from '../uploads/targen.js';
import { type TestOrg, type TestUser } from '../support/factories.js';
import type { TestServer } from '../support/harness.js';
import { useCloudPair, digestOn, openStream } from '../support/cloud-pair.js';

/**
 * Bringing a project back from the cloud, folder uploads in cloud mode, what a linked instance does when
 * the cloud goes away, and what the servers never log (docs/cloud.md); each case makes its own project,
 * and the outage case has servers of its own (it stops its cloud).
 */

describe('transfer/to-self-hosted, folder uploads and logs', () => {
  const pair = useCloudPair();
  const { SECRET, logged, cloudShop, changeOnCloud } = pair;
  let cloud: TestServer;
  let self: TestServer;
  let cloudOwner: TestUser;
  let team: TestOrg;
  before(() => ({ cloud, self, cloudOwner, team } = pair));

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

  it('neither server ever logs the link token or a secret value, through transfers both ways and forwarded requests', async () => {
    const { projectId } = await cloudShop();
    const read = await self.api(team.member.token).get(`/api/projects/${projectId}/env`);
    assert.equal(read.status, 200, read.text);
    const back = await self.api(team.owner.token).post(`/api/projects/${projectId}/transfer/to-self-hosted`);
    assert.equal(back.status, 200, back.text);
    assert.ok(logged.length > 0, 'the servers logged something');
    const all = logged.join('');
    assert.ok(!all.includes(cloudOwner.token), 'the link token is not in the logs');
    assert.ok(!all.includes(SECRET), 'no secret value is in the logs');
  });
});

describe('a linked instance whose cloud goes down', () => {
  const pair = useCloudPair();
  const { SECRET, shopProject } = pair;
  let cloud: TestServer;
  let self: TestServer;
  let team: TestOrg;
  before(() => ({ cloud, self, team } = pair));

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
});
