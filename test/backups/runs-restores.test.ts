import assert from 'node:assert/strict';
import { existsSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { RESTORE_TOKEN_TTL_MS } from '../../src/modules/backups/restores.service.js';
import { useBackupServer } from '../support/backup-suite.js';
import { createProjectWithVolume, type TestOrg } from '../support/factories.js';
import type { TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { fillVolume, treeDigest, waitTerminal } from './helpers.js';

describe('backup restores: byte for byte, offline during the swap, tokens, checked artifacts (local destination)', () => {
  const suite = useBackupServer();
  const { api, clock, policyFor, runNow } = suite;
  let server: TestServer;
  let team: TestOrg;
  let dest: { id: string; dir: string };
  before(() => ({ server, team, dest } = suite));

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
});
