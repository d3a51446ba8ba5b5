import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { useBackupServer } from '../support/backup-suite.js';
import { createProjectWithVolume, createUser, type TestOrg } from '../support/factories.js';
import type { TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { childrenWith, fillVolume, readSse, waitTerminal } from './helpers.js';


describe('backup runs in flight: one at a time, cancel, the live stream (local destination)', () => {
  const suite = useBackupServer();
  const { api, policyFor } = suite;
  let server: TestServer;
  let team: TestOrg;
  let dest: { id: string; dir: string };
  before(() => ({ server, team, dest } = suite));

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

  it('a run whose archiving process is killed fails in Berth\'s words, leaves no artifact, and the policy runs again', async () => {
    const p = await createProjectWithVolume(server, team.owner);
    mkdirSync(p.volume, { recursive: true });
    for (let i = 0; i < 16; i++) writeFileSync(path.join(p.volume, `big-${i}.bin`), randomBytes(4 * 1024 * 1024));
    const pol = await policyFor(p.id);
    const runId = (await api().post(`/api/backup-policies/${pol.id}/run`)).body.data.runId;
    // The server runs in this process: the archiving child is ours, its command line names the volume.
    const pid = await waitFor(() => childrenWith(p.volume)[0], 'the archiving child to start');
    process.kill(pid, 'SIGKILL');
    const fin = await waitTerminal(server, team.owner.token, `/api/backup-runs/${runId}`);
    assert.equal(fin.status, 'failed');
    assert.equal(fin.error, 'archiving the volume stopped: its process was killed (SIGKILL)');
    const polDir = path.join(dest.dir, 'berth', team.orgId, p.id, pol.id);
    assert.deepEqual(existsSync(polDir) ? readdirSync(polDir) : [], []);
    assert.deepEqual(childrenWith('volume-child'), []);
    const again = await api().post(`/api/backup-policies/${pol.id}/run`);
    assert.equal(again.status, 201);
    assert.equal((await waitTerminal(server, team.owner.token, `/api/backup-runs/${again.body.data.runId}`, 60000)).status, 'succeeded');
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
});
