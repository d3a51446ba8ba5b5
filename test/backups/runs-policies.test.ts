import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { useBackupServer } from '../support/backup-suite.js';
import { createDestination, createProjectWithVolume, createTeam, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { fillVolume, waitTerminal } from './helpers.js';

describe('backup policies: records, validation, retention, schedules (local destination)', () => {
  const suite = useBackupServer();
  const { api, clock, policyFor, runNow } = suite;
  let server: TestServer;
  let team: TestOrg;
  let dest: { id: string; dir: string };
  before(() => ({ server, team, dest } = suite));

  it('creates a policy with the record of contract section 8, defaulting to the data volume', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    const pol = await policyFor(p.id, { cronExpression: '0 3 * * *', timezone: 'Europe/Paris', retainCount: 3, projectId: 'nope', createdBy: 'someone' });
    for (const k of ['id', 'projectId', 'destinationId', 'serviceId', 'cronExpression', 'timezone', 'retainCount', 'retainDays', 'enabled', 'webhookEnabled', 'createdBy', 'createdAt', 'nextRunAt', 'lastSuccessAt', 'overdue']) {
      assert.ok(k in pol, `policy record has ${k}`);
    }
    assert.equal(pol.projectId, p.id);
    assert.equal(pol.serviceId, p.dataServiceId);
    assert.equal(pol.createdBy, team.owner.userId);
    assert.equal(pol.timezone, 'Europe/Paris');
    assert.equal(pol.enabled, true);
    assert.equal(pol.webhookEnabled, false);
    assert.equal(pol.overdue, false);
    assert.ok(pol.nextRunAt && new Date(pol.nextRunAt) > new Date());
    assert.ok(!('webhookToken' in pol));
    const list = await api().get(`/api/projects/${p.id}/backup-policies`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data.map((x: any) => x.id), [pol.id]);
  });

  it('validates the cron expression on create and update with INVALID_CRON, including one that never fires', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    for (const bad of ['not a cron', '61 * * * *', '0 0 31 2 *']) {
      const res = await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id, cronExpression: bad });
      assert.equal(res.status, 400, bad);
      assert.equal(res.body.error.code, 'INVALID_CRON');
      assert.equal(res.body.error.field, 'cronExpression');
    }
    const tz = await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id, cronExpression: '0 * * * *', timezone: 'Mars/Base' });
    assert.equal(tz.status, 400);
    assert.equal(tz.body.error.field, 'timezone');
    const pol = await policyFor(p.id, { cronExpression: '0 * * * *' });
    const upd = await api().patch(`/api/backup-policies/${pol.id}`, { cronExpression: '0 0 30 2 *' });
    assert.equal(upd.status, 400);
    assert.equal(upd.body.error.code, 'INVALID_CRON');
    const same = await api().get(`/api/projects/${p.id}/backup-policies`);
    assert.equal(same.body.data[0].cronExpression, '0 * * * *');
  });

  it('update accepts only allow-listed fields: projectId, serviceId and createdBy never change', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    const other = await createProjectWithVolume(server, team.owner);
    const pol = await policyFor(p.id);
    const res = await api(team.admin.token).patch(`/api/backup-policies/${pol.id}`, {
      projectId: other.id,
      serviceId: other.dataServiceId,
      createdBy: team.admin.userId,
      webhookToken: 'mine',
      retainCount: 5,
      retainDays: 30,
      cronExpression: '*/5 * * * *',
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.projectId, p.id);
    assert.equal(res.body.data.serviceId, p.dataServiceId);
    assert.equal(res.body.data.createdBy, team.owner.userId);
    assert.equal(res.body.data.retainCount, 5);
    assert.equal(res.body.data.retainDays, 30);
    assert.equal(res.body.data.cronExpression, '*/5 * * * *');
    assert.equal(res.body.data.webhookEnabled, false);
    assert.ok(!('webhookToken' in res.body.data));
    const bad = await api().patch(`/api/backup-policies/${pol.id}`, { retainCount: 'five' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'retainCount');
  });

  it('another org\'s destination or service in a policy body is 404', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    const stranger = await createUser(server);
    const theirs = await createDestination(server, stranger);
    const theirProject = await createProjectWithVolume(server, stranger);
    const res = await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: theirs.id });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.field, 'destinationId');
    const svc = await api().post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id, serviceId: theirProject.dataServiceId });
    assert.equal(svc.status, 404);
    const pol = await policyFor(p.id);
    const upd = await api().patch(`/api/backup-policies/${pol.id}`, { destinationId: theirs.id });
    assert.equal(upd.status, 404);
    // Their records are 404 to us, whatever the route.
    const theirPol = (await server.api(stranger.token).post(`/api/projects/${theirProject.id}/backup-policies`, { destinationId: theirs.id })).body.data;
    assert.equal((await api().patch(`/api/backup-policies/${theirPol.id}`, { retainCount: 1 })).status, 404);
    assert.equal((await api().post(`/api/backup-policies/${theirPol.id}/run`)).status, 404);
    assert.equal((await api().get(`/api/projects/${theirProject.id}/backup-runs`)).status, 404);
  });

  it('retention by count keeps protected runs on top and never the newest success; pruned runs are 404', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 4);
    const pol = await policyFor(p.id, { retainCount: 2 });
    const r1 = await runNow(pol.id);
    const prot = await api().post(`/api/backup-runs/${r1.id}/protect`, { protected: true });
    assert.equal(prot.status, 200);
    assert.equal(prot.body.data.protected, true);
    const r2 = await runNow(pol.id);
    const r3 = await runNow(pol.id);
    const r4 = await runNow(pol.id);
    await waitFor(async () => {
      const list = await api().get(`/api/projects/${p.id}/backup-runs?policyId=${pol.id}`);
      const ids = list.body.data.map((r: any) => r.id);
      assert.deepEqual(ids.sort(), [r1.id, r3.id, r4.id].sort());
      assert.equal((await api().get(`/api/backup-runs/${r2.id}`)).status, 404);
      const files = readdirSync(path.join(dest.dir, 'berth', team.orgId, p.id, pol.id)).sort();
      assert.deepEqual(files, [r1.id, r3.id, r4.id].map((id) => `${id}.tar.gz`).sort());
      return true;
    }, 'retention by count to prune the second run', 5000);
    // Released, the protected run is eligible again.
    const rel = await api().post(`/api/backup-runs/${r1.id}/protect`, { protected: false });
    assert.equal(rel.body.data.protected, false);
    await runNow(pol.id);
    await waitFor(async () => {
      assert.equal((await api().get(`/api/backup-runs/${r1.id}`)).status, 404);
      return true;
    }, 'the unprotected oldest run to be pruned', 5000);
    const bad = await api().post(`/api/backup-runs/${r4.id}/protect`, {});
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'protected');
  });

  it('a policy whose last success is older than twice its interval is overdue', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 7);
    const pol = await policyFor(p.id, { cronExpression: '0 * * * *' });
    assert.equal((await runNow(pol.id)).status, 'succeeded');
    const policy = async () => (await api().get(`/api/projects/${p.id}/backup-policies`)).body.data[0];
    assert.equal((await policy()).overdue, false, 'just backed up');
    clock.advance(3 * 3600_000); // three hourly runs missed
    const got = await policy();
    assert.equal(got.overdue, true);
    assert.equal((await runNow(pol.id)).status, 'succeeded');
    assert.equal((await policy()).overdue, false, 'a success now');
  });

  it('a schedule missed while the server was down runs once, with trigger cron', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 8);
    const pol = await policyFor(p.id, { cronExpression: '0 0 1 1 *' });
    // Missed three hours ago (the server's clock moved past it): one run, then the next time moves on.
    clock.advance(Date.parse(pol.nextRunAt!) - clock.now() + 3 * 3600_000);
    const { runDueSchedules } = await import('../../src/modules/backups/schedules.js');
    await runDueSchedules(server.ctx);
    await runDueSchedules(server.ctx);
    const runs = (await api().get(`/api/projects/${p.id}/backup-runs`)).body.data;
    assert.equal(runs.length, 1);
    assert.equal(runs[0].trigger, 'cron');
    const fin = await waitTerminal(server, team.owner.token, `/api/backup-runs/${runs[0].id}`);
    assert.equal(fin.status, 'succeeded');
    const next = (await api().get(`/api/projects/${p.id}/backup-policies`)).body.data[0].nextRunAt;
    assert.ok(new Date(next) > new Date(clock.now()));
  });

  it('a project that moved to the cloud: its local schedules and webhook do not run here', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 9);
    const pol = await policyFor(p.id, { cronExpression: '0 0 1 1 *', enableWebhook: true });
    assert.ok(pol.webhookToken);
    clock.advance(Date.parse(pol.nextRunAt!) - clock.now() + 3600_000); // its time passed an hour ago
    await server.ctx.db.updateTable('projects').set({ location: 'cloud' }).where('id', '=', p.id).execute();
    const { runDueSchedules } = await import('../../src/modules/backups/schedules.js');
    await runDueSchedules(server.ctx);
    const hook = await fetch(`${server.url}/api/webhooks/backup`, { method: 'POST', headers: { authorization: `Bearer ${pol.webhookToken}` }, signal: AbortSignal.timeout(10000) });
    assert.equal(hook.status, 404);
    const runs = await server.ctx.db.selectFrom('backupRuns').select('id').where('policyId', '=', pol.id).execute();
    assert.equal(runs.length, 0);
    // Back on this instance, the missed schedule runs once.
    await server.ctx.db.updateTable('projects').set({ location: 'local' }).where('id', '=', p.id).execute();
    await runDueSchedules(server.ctx);
    const after = await server.ctx.db.selectFrom('backupRuns').select(['id', 'trigger']).where('policyId', '=', pol.id).execute();
    assert.deepEqual(after.map((r) => r.trigger), ['cron']);
    const fin = await waitTerminal(server, team.owner.token, `/api/backup-runs/${after[0]!.id}`);
    assert.equal(fin.status, 'succeeded');
  });

  it('deleting a policy needs admin on the project; its runs stay listed', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    const pol = await policyFor(p.id);
    const run = await runNow(pol.id);
    const m = await api(team.member.token).delete(`/api/backup-policies/${pol.id}`);
    assert.equal(m.status, 403);
    const ok = await api(team.admin.token).delete(`/api/backup-policies/${pol.id}`);
    assert.equal(ok.status, 200);
    assert.equal((await api().patch(`/api/backup-policies/${pol.id}`, { retainCount: 1 })).status, 404);
    assert.equal((await api().get(`/api/backup-runs/${run.id}`)).status, 200);
  });
});

describe('backup routes: the in-handler checks of Authentication item 5', () => {
  let server: TestServer;
  let team: TestOrg;
  before(async () => {
    server = await startTestServer({ background: true });
    team = await createTeam(server);
  });
  after(() => server.close());

  it('member: policies and runs yes, restores no (admin on the project); restricted: only what grants give', async () => {
    const dest = await createDestination(server, team.owner);
    const p = await createProjectWithVolume(server, team.owner);
    const other = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 9);
    const m = server.api(team.member.token);
    const r = server.api(team.restricted.token);
    // Member: write on every project, read on destinations.
    const pol = await m.post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id });
    assert.equal(pol.status, 201, pol.text);
    const polId = pol.body.data.id;
    assert.equal((await m.patch(`/api/backup-policies/${polId}`, { retainCount: 4 })).status, 200);
    const run = await m.post(`/api/backup-policies/${polId}/run`);
    assert.equal(run.status, 201);
    const fin = await waitTerminal(server, team.member.token, `/api/backup-runs/${run.body.data.runId}`);
    assert.equal(fin.status, 'succeeded');
    assert.equal((await m.post(`/api/backup-runs/${fin.id}/protect`, { protected: true })).status, 200);
    assert.equal((await m.post(`/api/backup-runs/${fin.id}/restore/prepare`)).status, 403);
    assert.equal((await m.delete(`/api/backup-policies/${polId}`)).status, 403);
    assert.equal((await m.post('/api/backup-destinations', { name: 'x', kind: 'local', path: tempDir() })).status, 403);
    assert.equal((await m.get(`/api/backup-destinations/${dest.id}`)).status, 200);
    assert.equal((await m.patch(`/api/backup-destinations/${dest.id}`, { name: 'y' })).status, 403);

    // Restricted without grants: 403 on the org's records, lists are empty.
    assert.equal((await r.get(`/api/backup-runs/${fin.id}`)).status, 403);
    assert.equal((await r.patch(`/api/backup-policies/${polId}`, { retainCount: 1 })).status, 403);
    assert.equal((await r.get(`/api/projects/${p.id}/backup-runs`)).status, 403);
    assert.deepEqual((await r.get('/api/backup-destinations')).body.data, []);

    // Grants: read on the project -> run view; write -> policies; admin -> restores and policy delete.
    const grant = async (resourceType: string, resourceId: string, permissions: string[]) => {
      const res = await server.api(team.owner.token).post('/api/permissions/grants', { userId: team.restricted.userId, resourceType, resourceId, permissions });
      assert.ok(res.status === 200 || res.status === 201, res.text);
    };
    await grant('project', p.id, ['read']);
    const rv = await r.get(`/api/backup-runs/${fin.id}`);
    assert.equal(rv.status, 200, rv.text);
    assert.equal((await r.post(`/api/backup-runs/${fin.id}/protect`, { protected: false })).status, 403);
    assert.equal((await r.post(`/api/backup-policies/${polId}/run`)).status, 403);
    await grant('project', p.id, ['write']);
    assert.equal((await r.post(`/api/backup-runs/${fin.id}/protect`, { protected: false })).status, 200);
    assert.equal((await r.patch(`/api/backup-policies/${polId}`, { retainCount: 2 })).status, 200);
    assert.equal((await r.post(`/api/backup-runs/${fin.id}/restore/prepare`)).status, 403);
    assert.equal((await r.delete(`/api/backup-policies/${polId}`)).status, 403);
    // A policy on a project it may write, but a destination it may not read: 403.
    assert.equal((await r.post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id })).status, 403);
    await grant('backup_destination', dest.id, ['read']);
    assert.equal((await r.post(`/api/projects/${p.id}/backup-policies`, { destinationId: dest.id })).status, 201);
    assert.equal((await r.post(`/api/projects/${other.id}/backup-policies`, { destinationId: dest.id })).status, 403);
    assert.equal((await r.get('/api/backup-destinations')).body.data.length, 1);
    await grant('project', p.id, ['admin']);
    const prep = await r.post(`/api/backup-runs/${fin.id}/restore/prepare`);
    assert.equal(prep.status, 201);
    assert.equal((await r.get(`/api/backup-restores/${prep.body.data.restoreId}`)).status, 200);
    assert.equal((await r.post(`/api/backup-restores/${prep.body.data.restoreId}/cancel`)).status, 200);
    // Restricted with read only: restore view yes, cancel no.
    const prep2 = await server.api(team.owner.token).post(`/api/backup-runs/${fin.id}/restore/prepare`);
    await grant('project', p.id, ['read']);
    assert.equal((await r.get(`/api/backup-restores/${prep2.body.data.restoreId}`)).status, 200);
    assert.equal((await r.post(`/api/backup-restores/${prep2.body.data.restoreId}/cancel`)).status, 403);
    assert.equal((await r.post(`/api/backup-restores/${prep2.body.data.restoreId}/apply`, { confirmationToken: prep2.body.data.confirmationToken })).status, 403);
    // Another org's restore is 404.
    const stranger = await createUser(server);
    assert.equal((await server.api(stranger.token).get(`/api/backup-restores/${prep2.body.data.restoreId}`)).status, 404);
    assert.equal((await server.api(stranger.token).post(`/api/backup-restores/${prep2.body.data.restoreId}/apply`, { confirmationToken: prep2.body.data.confirmationToken })).status, 404);
  });
});
