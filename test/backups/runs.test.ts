import assert from 'node:assert/strict';
import { existsSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RESTORE_TOKEN_TTL_MS } from '../../src/modules/backups/restores.service.js';
import { testClock } from '../support/clock.js';
import { createDestination, createProjectWithVolume, createTeam, createUser, type TestOrg } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { fillVolume, readSse, treeDigest, waitTerminal } from './helpers.js';

describe('backup policies, runs and restores (local destination)', () => {
  let server: TestServer;
  let team: TestOrg;
  let dest: { id: string; dir: string };
  const clock = testClock();

  before(async () => {
    server = await startTestServer({ background: true, clock });
    team = await createTeam(server);
    dest = await createDestination(server, team.owner);
  });
  after(() => server.close());

  const api = (t = team.owner.token) => server.api(t);

  async function policyFor(projectId: string, body: Record<string, unknown> = {}) {
    const res = await api().post(`/api/projects/${projectId}/backup-policies`, { destinationId: dest.id, ...body });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  }

  async function runNow(policyId: string) {
    const res = await api().post(`/api/backup-policies/${policyId}/run`);
    assert.ok(res.status === 201 || res.status === 200, res.text);
    return waitTerminal(server, team.owner.token, `/api/backup-runs/${res.body.data.runId}`);
  }

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

  it('a volume with binary files, unicode names and nested folders backs up and restores byte for byte', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 7);
    const before = treeDigest(p.volume);
    const pol = await policyFor(p.id, { retainCount: 5 });
    const run = await runNow(pol.id);
    assert.equal(run.status, 'succeeded', run.error);
    assert.equal(run.trigger, 'manual');
    assert.match(run.sha256, /^[0-9a-f]{64}$/);
    assert.ok(run.sizeBytes > 0);
    assert.ok(run.startedAt && run.finishedAt);
    // The artifact is final (no temporary object left) and matches the record.
    const files = readdirSync(path.join(dest.dir, 'berth', team.orgId, p.id, pol.id));
    assert.deepEqual(files, [`${run.id}.tar.gz`]);
    const pols = (await api().get(`/api/projects/${p.id}/backup-policies`)).body.data;
    assert.ok(pols[0].lastSuccessAt);

    // Change the data, then restore.
    rmSync(path.join(p.volume, 'nested'), { recursive: true });
    writeFileSync(path.join(p.volume, 'top.txt'), 'changed');
    writeFileSync(path.join(p.volume, 'new-file'), 'added after the backup');
    const prep = await api().post(`/api/backup-runs/${run.id}/restore/prepare`, {});
    assert.equal(prep.status, 201, prep.text);
    const { restoreId, confirmationToken } = prep.body.data;
    assert.ok(restoreId && confirmationToken);
    const staged = await api().get(`/api/backup-restores/${restoreId}`);
    assert.equal(staged.body.data.status, 'staged');
    assert.ok(staged.body.data.expiresAt);
    assert.ok(!staged.text.includes(confirmationToken));
    const applied = await api().post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken });
    assert.equal(applied.status, 200, applied.text);
    const done = await waitTerminal(server, team.owner.token, `/api/backup-restores/${restoreId}`);
    assert.equal(done.status, 'succeeded', done.error);
    assert.ok(done.appliedAt && done.finishedAt);
    assert.deepEqual(treeDigest(p.volume), before);
    // Nothing left beside the target (the old copy is removed right after the swap).
    await waitFor(() => {
      assert.deepEqual(readdirSync(path.dirname(p.volume)), ['data']);
      return true;
    }, 'only the restored volume to be left beside its target', 5000);
    // The token is one-time.
    const again = await api().post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken });
    assert.ok(again.status === 409 || again.status === 400);
  });

  it('apply stops the project\'s running process before the swap and starts it again after', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 12);
    const pol = await policyFor(p.id);
    const run = await runNow(pol.id);
    writeFileSync(path.join(p.volume, 'top.txt'), 'changed');
    const calls: string[] = [];
    const real = server.ctx.ports.runtime;
    server.ctx.ports.runtime = {
      async state(_c, _o, projectId) {
        calls.push(`state:${projectId === p.id}`);
        return { state: 'running', url: 'http://x', port: 1 };
      },
      async takeOffline() {
        calls.push(`offline:${(await import('node:fs')).readFileSync(path.join(p.volume, 'top.txt'), 'utf8')}`);
      },
      async bringOnline() {
        calls.push(`online:${(await import('node:fs')).readFileSync(path.join(p.volume, 'top.txt'), 'utf8')}`);
      },
      async syncRouting() {
        return { status: 'synced' };
      },
      async removeProject() {},
    };
    try {
      const { restoreId, confirmationToken } = (await api().post(`/api/backup-runs/${run.id}/restore/prepare`)).body.data;
      await api().post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken });
      const done = await waitTerminal(server, team.owner.token, `/api/backup-restores/${restoreId}`);
      assert.equal(done.status, 'succeeded', done.error);
      assert.deepEqual(calls, ['state:true', 'offline:changed', 'online:hello 12\n']);
    } finally {
      server.ctx.ports.runtime = real;
    }
  });

  it('apply needs the exact token: a wrong one is INVALID_CONFIRMATION_TOKEN and does not use up the restore', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 2);
    const pol = await policyFor(p.id);
    const run = await runNow(pol.id);
    const { restoreId, confirmationToken } = (await api().post(`/api/backup-runs/${run.id}/restore/prepare`)).body.data;
    const noBody = await api().post(`/api/backup-restores/${restoreId}/apply`);
    assert.equal(noBody.status, 400);
    assert.equal(noBody.body.error.code, 'INVALID_CONFIRMATION_TOKEN');
    for (const body of [{}, { confirmationToken: 42 }, { confirmationToken: 'x'.repeat(5000) }, { confirmationToken: 'wrong' }, { confirmationToken: confirmationToken + 'x' }, { confirmationToken: confirmationToken.toUpperCase() }]) {
      const res = await api().post(`/api/backup-restores/${restoreId}/apply`, body);
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'INVALID_CONFIRMATION_TOKEN');
      assert.equal(res.body.error.field, 'confirmationToken');
    }
    assert.equal((await api().get(`/api/backup-restores/${restoreId}`)).body.data.status, 'staged');
    // Cancel: a cancelled restore cannot be applied (409), not even with the right token.
    const c = await api().post(`/api/backup-restores/${restoreId}/cancel`);
    assert.equal(c.status, 200);
    assert.equal(c.body.data.status, 'cancelled');
    const late = await api().post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken });
    assert.equal(late.status, 409);
    assert.equal(late.body.error.code, 'CONFLICT');
    assert.equal((await api().post(`/api/backup-restores/${restoreId}/cancel`)).status, 409);
    // An expired token is refused.
    const second = (await api().post(`/api/backup-runs/${run.id}/restore/prepare`)).body.data;
    clock.advance(RESTORE_TOKEN_TTL_MS + 1000);
    const exp = await api().post(`/api/backup-restores/${second.restoreId}/apply`, { confirmationToken: second.confirmationToken });
    assert.equal(exp.status, 400);
    assert.equal(exp.body.error.code, 'INVALID_CONFIRMATION_TOKEN');
  });

  it('prepare verifies the artifact\'s sha256 before anything else; a failed restore leaves the old data whole', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 3);
    const pol = await policyFor(p.id);
    const run = await runNow(pol.id);
    const artifact = path.join(dest.dir, 'berth', team.orgId, p.id, pol.id, `${run.id}.tar.gz`);
    const good = (await import('node:fs')).readFileSync(artifact);
    // Tampered artifact: prepare refuses.
    const bad = Buffer.from(good);
    bad[bad.length - 10] ^= 0xff;
    writeFileSync(artifact, bad);
    const prep = await api().post(`/api/backup-runs/${run.id}/restore/prepare`);
    assert.equal(prep.status, 409);
    // Artifact changes after prepare: apply fails and the data is untouched.
    writeFileSync(artifact, good);
    const { restoreId, confirmationToken } = (await api().post(`/api/backup-runs/${run.id}/restore/prepare`)).body.data;
    // Prepare pinned the exact file it hashed (apply reads it without hashing it again).
    const pinned = await server.ctx.db.selectFrom('backupRestores').select('artifactIdentity').where('id', '=', restoreId).executeTakeFirstOrThrow();
    assert.ok(pinned.artifactIdentity);
    writeFileSync(artifact, bad);
    writeFileSync(path.join(p.volume, 'current.txt'), 'current data');
    const current = treeDigest(p.volume);
    assert.equal((await api().post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken })).status, 200);
    const done = await waitTerminal(server, team.owner.token, `/api/backup-restores/${restoreId}`);
    assert.equal(done.status, 'failed');
    assert.match(done.error, /changed in the destination after the restore was prepared/);
    assert.deepEqual(treeDigest(p.volume), current);
    assert.deepEqual(readdirSync(path.dirname(p.volume)), ['data']);
    // The same bytes put back as a new file are still not the file prepare verified.
    writeFileSync(artifact, good);
    writeFileSync(`${artifact}.new`, good);
    const third = (await api().post(`/api/backup-runs/${run.id}/restore/prepare`)).body.data;
    renameSync(`${artifact}.new`, artifact);
    assert.equal((await api().post(`/api/backup-restores/${third.restoreId}/apply`, { confirmationToken: third.confirmationToken })).status, 200);
    const third2 = await waitTerminal(server, team.owner.token, `/api/backup-restores/${third.restoreId}`);
    assert.equal(third2.status, 'failed');
    assert.deepEqual(treeDigest(p.volume), current);
    // Untouched after prepare: the pinned restore succeeds.
    const fourth = (await api().post(`/api/backup-runs/${run.id}/restore/prepare`)).body.data;
    assert.equal((await api().post(`/api/backup-restores/${fourth.restoreId}/apply`, { confirmationToken: fourth.confirmationToken })).status, 200);
    assert.equal((await waitTerminal(server, team.owner.token, `/api/backup-restores/${fourth.restoreId}`)).status, 'succeeded');
    assert.ok(!existsSync(path.join(p.volume, 'current.txt')));
  });

  it('a trigger while a run is in flight answers that run; cancel stops it and removes its partial artifact', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    const pol = await policyFor(p.id);
    // Hold the worker: write a queued run through the API while the queue is busy is racy, so
    // cancel a queued run deterministically by pausing nothing and checking idempotency instead.
    const a = await api().post(`/api/backup-policies/${pol.id}/run`);
    const b = await api().post(`/api/backup-policies/${pol.id}/run`);
    assert.equal(a.status, 201);
    if (b.status === 200) assert.equal(b.body.data.runId, a.body.data.runId);
    const c = await api().post(`/api/backup-runs/${a.body.data.runId}/cancel`);
    assert.ok(c.status === 200 || c.status === 409);
    const fin = await waitTerminal(server, team.owner.token, `/api/backup-runs/${a.body.data.runId}`);
    assert.ok(['cancelled', 'succeeded'].includes(fin.status));
    const polDir = path.join(dest.dir, 'berth', team.orgId, p.id, pol.id);
    const left = existsSync(polDir) ? readdirSync(polDir) : [];
    assert.ok(!left.some((f) => f.startsWith('.tmp-')));
    if (fin.status === 'cancelled') assert.deepEqual(left, []);
    assert.equal((await api().post(`/api/backup-runs/${a.body.data.runId}/cancel`)).status, 409);
  });

  it('a run in flight: another trigger answers it (200, same runId); cancel stops it and leaves no artifact', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    const { mkdirSync } = await import('node:fs');
    const { randomBytes } = await import('node:crypto');
    mkdirSync(p.volume, { recursive: true });
    for (let i = 0; i < 6; i++) writeFileSync(path.join(p.volume, `big-${i}.bin`), randomBytes(4 * 1024 * 1024));
    const pol = await policyFor(p.id);
    const first = await api().post(`/api/backup-policies/${pol.id}/run`);
    assert.equal(first.status, 201);
    const runId = first.body.data.runId;
    const second = await api().post(`/api/backup-policies/${pol.id}/run`);
    assert.equal(second.status, 200);
    assert.equal(second.body.data.runId, runId);
    let status = 'queued';
    for (let i = 0; i < 400 && status !== 'uploading'; i++) {
      status = (await api().get(`/api/backup-runs/${runId}`)).body.data.status;
      if (status === 'uploading') break;
      await new Promise((r) => setTimeout(r, 5));
    }
    const c = await api().post(`/api/backup-runs/${runId}/cancel`);
    assert.equal(c.status, 200, c.text);
    const fin = await waitTerminal(server, team.owner.token, `/api/backup-runs/${runId}`);
    assert.equal(fin.status, 'cancelled');
    assert.equal(fin.sha256 === null || typeof fin.sha256 === 'string', true);
    const polDir = path.join(dest.dir, 'berth', team.orgId, p.id, pol.id);
    await waitFor(() => {
      assert.deepEqual(existsSync(polDir) ? readdirSync(polDir) : [], []);
      return true;
    }, 'the cancelled run\'s partial artifact to be removed', 5000);
    // The policy is free again.
    const next = await api().post(`/api/backup-policies/${pol.id}/run`);
    assert.equal(next.status, 201);
    assert.notEqual(next.body.data.runId, runId);
    await api().post(`/api/backup-runs/${next.body.data.runId}/cancel`);
    await waitTerminal(server, team.owner.token, `/api/backup-runs/${next.body.data.runId}`);
  });

  it('a restore cancelled while applying leaves either the old data or the restored data, never a mix', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    const { mkdirSync } = await import('node:fs');
    const { randomBytes } = await import('node:crypto');
    mkdirSync(p.volume, { recursive: true });
    for (let i = 0; i < 6; i++) writeFileSync(path.join(p.volume, `big-${i}.bin`), randomBytes(4 * 1024 * 1024));
    const backedUp = treeDigest(p.volume);
    const pol = await policyFor(p.id);
    const run = await runNow(pol.id);
    for (let i = 0; i < 6; i++) writeFileSync(path.join(p.volume, `big-${i}.bin`), `changed ${i}`);
    const changed = treeDigest(p.volume);
    const { restoreId, confirmationToken } = (await api().post(`/api/backup-runs/${run.id}/restore/prepare`)).body.data;
    assert.equal((await api().post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken })).status, 200);
    const c = await api().post(`/api/backup-restores/${restoreId}/cancel`);
    assert.ok(c.status === 200 || c.status === 409, c.text);
    const fin = await waitTerminal(server, team.owner.token, `/api/backup-restores/${restoreId}`);
    assert.ok(['cancelled', 'succeeded'].includes(fin.status), fin.status);
    assert.deepEqual(treeDigest(p.volume), fin.status === 'cancelled' ? changed : backedUp);
    await waitFor(() => {
      assert.deepEqual(readdirSync(path.dirname(p.volume)), ['data']);
      return true;
    }, 'only the volume to be left beside its target', 5000);
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

  it('SSE: snapshot first, live transitions and progress, complete, then close; a finished run gets snapshot and complete at once', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 5);
    const pol = await policyFor(p.id);
    const start = await api().post(`/api/backup-policies/${pol.id}/run`);
    const runId = start.body.data.runId;
    const live = await readSse(`${server.url}/api/backup-runs/${runId}/stream`, team.owner.token);
    assert.equal(live.status, 200);
    assert.match(live.contentType ?? '', /text\/event-stream/);
    assert.equal(live.events[0]!.event, 'snapshot');
    assert.equal(live.events[0]!.data.id, runId);
    const last = live.events[live.events.length - 1]!;
    assert.equal(last.event, 'complete');
    assert.equal(last.data.status, 'succeeded');
    const transitions = live.events.filter((e) => e.event === 'transition');
    for (const t of transitions) assert.ok(t.data.from && t.data.to && t.data.at);
    if (live.events[0]!.data.status === 'queued') assert.ok(transitions.length >= 1);
    assert.equal(transitions[transitions.length - 1]?.data.to ?? 'succeeded', 'succeeded');
    const ids = live.events.map((e) => Number(e.id));
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
    // Already terminal.
    const fin = await readSse(`${server.url}/api/backup-runs/${runId}/stream`, team.owner.token);
    assert.deepEqual(fin.events.map((e) => e.event), ['snapshot', 'complete']);
    // Another org: 404 before the first byte.
    const stranger = await createUser(server);
    const res = await fetch(`${server.url}/api/backup-runs/${runId}/stream`, { headers: { authorization: `Bearer ${stranger.token}` } });
    assert.equal(res.status, 404);
    assert.match(res.headers.get('content-type') ?? '', /json/);
    await res.text();
  });

  it('the restore stream follows a restore to its end', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    fillVolume(p.volume, 6);
    const pol = await policyFor(p.id);
    const run = await runNow(pol.id);
    const { restoreId, confirmationToken } = (await api().post(`/api/backup-runs/${run.id}/restore/prepare`)).body.data;
    const staged = fetch(`${server.url}/api/backup-restores/${restoreId}/stream`, { headers: { authorization: `Bearer ${team.owner.token}` } });
    await new Promise((r) => setTimeout(r, 100));
    await api().post(`/api/backup-restores/${restoreId}/apply`, { confirmationToken });
    const text = await (await staged).text();
    assert.match(text, /^: stream open/);
    const events = [...text.matchAll(/event: (\w+)/g)].map((m) => m[1]);
    assert.equal(events[0], 'snapshot');
    assert.equal(events[events.length - 1], 'complete');
    assert.ok(events.includes('transition'));
    assert.match(text, /"status":"succeeded"/);
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
