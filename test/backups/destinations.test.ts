import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createProjectWithVolume, createTeam, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { fillVolume, treeDigest, waitTerminal } from './helpers.js';
import { startS3 } from './s3.js';

describe('backup destinations', () => {
  let server: TestServer;
  let team: TestOrg;
  let s3: Awaited<ReturnType<typeof startS3>>;

  before(async () => {
    [server, s3] = await Promise.all([startTestServer({ background: true }), startS3()]);
    team = await createTeam(server);
  });
  after(async () => {
    await server.close();
    await s3.close();
  });

  const api = (t = team.owner.token) => server.api(t);
  const s3Body = (extra: Record<string, unknown> = {}) => ({
    name: 's3',
    kind: 's3',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    bucket: s3.bucket,
    prefix: 'team-a',
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    forcePathStyle: true,
    ...extra,
  });

  it('local: create, get, list, update, test (probe written, read back and deleted), delete', async () => {
    const dir = tempDir('berth-dest-');
    const c = await api().post('/api/backup-destinations', { name: 'disk', kind: 'local', path: dir, bogus: 1 });
    assert.equal(c.status, 201, c.text);
    const d = c.body.data;
    assert.deepEqual(Object.keys(d).sort(), ['createdAt', 'id', 'kind', 'name', 'path', 'updatedAt']);
    assert.equal(d.path, dir);
    assert.equal((await api().get(`/api/backup-destinations/${d.id}`)).body.data.name, 'disk');
    assert.ok((await api().get('/api/backup-destinations')).body.data.some((x: any) => x.id === d.id));
    const u = await api().patch(`/api/backup-destinations/${d.id}`, { name: 'disk2' });
    assert.equal(u.body.data.name, 'disk2');
    const t = await api().post(`/api/backup-destinations/${d.id}/test`);
    assert.equal(t.status, 200);
    assert.equal(t.body.data.ok, true, t.text);
    assert.deepEqual(readdirSync(dir), []);
    assert.equal((await api().delete(`/api/backup-destinations/${d.id}`)).status, 200);
    assert.equal((await api().get(`/api/backup-destinations/${d.id}`)).status, 404);
  });

  it('validation names the field; kind cannot change', async () => {
    const a = await api().post('/api/backup-destinations', { name: 'x', kind: 'local', path: 'relative/dir' });
    assert.equal(a.status, 400);
    assert.equal(a.body.error.field, 'path');
    const b = await api().post('/api/backup-destinations', { name: 'x', kind: 'ftp', path: '/tmp' });
    assert.equal(b.status, 400);
    assert.equal(b.body.error.field, 'kind');
    const c = await api().post('/api/backup-destinations', s3Body({ secretAccessKey: undefined }));
    assert.equal(c.status, 400);
    assert.equal(c.body.error.field, 'secretAccessKey');
    const e = await api().post('/api/backup-destinations', s3Body({ endpoint: 'ftp://x' }));
    assert.equal(e.body.error.field, 'endpoint');
    const n = await api().post('/api/backup-destinations', { name: 'x'.repeat(101), kind: 'local', path: '/tmp' });
    assert.equal(n.body.error.field, 'name');
    for (const bad of [server.dataDir, path.join(server.dataDir, 'volumes', 'prj_x'), '/']) {
      const res = await api().post('/api/backup-destinations', { name: 'x', kind: 'local', path: bad });
      assert.equal(res.status, 400, bad);
      assert.equal(res.body.error.field, 'path');
    }
    const ok = (await api().post('/api/backup-destinations', { name: 'x', kind: 'local', path: tempDir() })).body.data;
    const k = await api().patch(`/api/backup-destinations/${ok.id}`, { kind: 's3' });
    assert.equal(k.status, 400);
    assert.equal(k.body.error.field, 'kind');
  });

  it('s3: the secret key is encrypted at rest and masked on read; test passes against an S3-compatible server', async () => {
    const c = await api().post('/api/backup-destinations', s3Body());
    assert.equal(c.status, 201, c.text);
    const d = c.body.data;
    assert.equal(d.secretAccessKey, '********');
    assert.equal(d.forcePathStyle, true);
    assert.ok(!c.text.includes('S3RVER"') || d.accessKeyId === 'S3RVER');
    const row = await server.ctx.db.selectFrom('backupDestinations').selectAll().where('id', '=', d.id).executeTakeFirstOrThrow();
    assert.notEqual(row.secretAccessKey, s3.secretAccessKey);
    assert.match(row.secretAccessKey!, /^v1\./);
    const got = await api().get(`/api/backup-destinations/${d.id}`);
    assert.equal(got.body.data.secretAccessKey, '********');
    const t = await api().post(`/api/backup-destinations/${d.id}/test`);
    assert.equal(t.body.data.ok, true, t.text);
    // Sending the mask back keeps the secret; a wrong secret makes the test fail.
    await api().patch(`/api/backup-destinations/${d.id}`, { secretAccessKey: '********', name: 'renamed' });
    assert.equal((await api().post(`/api/backup-destinations/${d.id}/test`)).body.data.ok, true);
    const unreachable = (await api().post('/api/backup-destinations', s3Body({ endpoint: 'http://127.0.0.1:1' }))).body.data;
    const bad = await api().post(`/api/backup-destinations/${unreachable.id}/test`);
    assert.equal(bad.status, 200);
    assert.equal(bad.body.data.ok, false);
    assert.ok(bad.body.data.error);
    assert.ok(!bad.text.includes(s3.secretAccessKey + '"'));
  });

  it('s3: a volume backs up and restores byte for byte', async () => {
    const d = (await api().post('/api/backup-destinations', s3Body({ prefix: 'roundtrip' }))).body.data;
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 11);
    const before = treeDigest(p.volume);
    const pol = (await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: d.id })).body.data;
    const runId = (await api().post(`/api/backup-policies/${pol.id}/run`)).body.data.runId;
    const run = await waitTerminal(server, team.owner.token, `/api/backup-runs/${runId}`);
    assert.equal(run.status, 'succeeded', run.error);
    rmSync(p.volume, { recursive: true });
    writeFileSync(path.join(path.dirname(p.volume), 'sibling-kept.txt'), 'x');
    const { restoreId, confirmationToken } = (await api().post(`/api/backup-runs/${runId}/restore/prepare`, {})).body.data;
    assert.equal((await api().post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken })).status, 200);
    const r = await waitTerminal(server, team.owner.token, `/api/backup-restores/${restoreId}`);
    assert.equal(r.status, 'succeeded', r.error);
    assert.ok(existsSync(p.volume));
    assert.deepEqual(treeDigest(p.volume), before);
  });

  it('a destination in use cannot be deleted; another org\'s is 404; a member reads but cannot write', async () => {
    const dir = tempDir('berth-dest-');
    const d = (await api().post('/api/backup-destinations', { name: 'used', kind: 'local', path: dir })).body.data;
    const p = await createProjectWithVolume(server, team.owner);
    await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: d.id });
    const del = await api().delete(`/api/backup-destinations/${d.id}`);
    assert.equal(del.status, 409);
    assert.equal(del.body.error.code, 'CONFLICT');
    const stranger = await createUser(server);
    for (const [m, u] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/test']] as const) {
      const res = await server.api(stranger.token).request(m, `/api/backup-destinations/${d.id}${u}`, m === 'PATCH' ? { name: 'z' } : undefined);
      assert.equal(res.status, 404, `${m} ${u}`);
    }
    assert.ok(!(await server.api(stranger.token).get('/api/backup-destinations')).body.data.some((x: any) => x.id === d.id));
    const m = server.api(team.member.token);
    assert.equal((await m.get(`/api/backup-destinations/${d.id}`)).status, 200);
    assert.equal((await m.patch(`/api/backup-destinations/${d.id}`, { name: 'm' })).status, 403);
    assert.equal((await m.post(`/api/backup-destinations/${d.id}/test`)).status, 403);
    assert.equal((await m.delete(`/api/backup-destinations/${d.id}`)).status, 403);
    assert.equal((await server.api(team.admin.token).patch(`/api/backup-destinations/${d.id}`, { name: 'a' })).status, 200);
    // The grant catalog lists destinations.
    const cat = await api().get('/api/permissions/resources?type=backup_destination');
    if (cat.status === 200) assert.ok(JSON.stringify(cat.body).includes(d.id));
  });
});
