/**
 * A transfer with data run in the background (docs/cloud.md "Transfers in the background"):
 * `POST /api/projects/:id/transfers { to, includeData }` answers 202 with the transfer's record at
 * once; its events stream the bytes of each service's dump as it is written, sent and loaded, then
 * the record with the same result the synchronous route answers. What can be refused at once is
 * refused before the 202; another org's project is 404. Real servers: the host's Redis, both sides.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { execIn, serviceRunning } from '../services/helpers.js';
import { useCloudPair } from '../support/cloud-pair.js';
import { createUser } from '../support/factories.js';
import type { TestServer } from '../support/harness.js';
import type { TestOrg, TestUser } from '../support/factories.js';

const root = process.getuid?.() === 0;

/** Reads an SSE answer to its end: each event's name and data. */
async function events(url: string, token: string): Promise<Array<{ event: string; data: any }>> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: AbortSignal.timeout(600_000) });
  assert.equal(res.status, 200);
  const text = await res.text();
  return text
    .split('\n\n')
    .map((frame) => ({ event: /^event: (.*)$/m.exec(frame)?.[1], data: /^data: (.*)$/m.exec(frame)?.[1] }))
    .filter((f): f is { event: string; data: string } => !!f.event && f.data !== undefined)
    .map((f) => ({ event: f.event, data: JSON.parse(f.data) }));
}

describe('transfers with data in the background, with progress', { skip: root ? false : 'the sandbox runs services under project uids only as root' }, () => {
  const pair = useCloudPair({ runtime: 'sandbox', background: true });
  let cloud: TestServer;
  let self: TestServer;
  let cloudOwner: TestUser;
  let team: TestOrg;
  before(() => ({ cloud, self, cloudOwner, team } = pair));

  it('202 with the record at once; the events carry the dump, send and load of each service, then the result; the cloud instance holds the data', async () => {
    const api = self.api(team.owner.token);
    const p = (await pair.shopProject()) as { id: string };
    const made = await api.post(`/api/projects/${p.id}/services`, { kind: 'redis', name: 'cache' });
    assert.equal(made.status, 201, made.text);
    const s = await serviceRunning(self, team.owner.token, p.id, made.body.data.id, 120_000);
    const creds = (await api.get(`/api/projects/${p.id}/services/${s.id}/credentials`)).body.data;
    const cli = (at: any, pw: string, ...args: string[]) => execIn(at.internalHost, '/usr/bin/redis-cli', ['--no-auth-warning', '-h', at.internalHost, '-p', String(at.port), ...args], { REDISCLI_AUTH: pw });
    assert.equal((await cli(s, creds.password, 'set', 'greeting', 'hello')).out.trim(), 'OK');

    const started = await api.post(`/api/projects/${p.id}/transfers`, { to: 'cloud', includeData: true });
    assert.equal(started.status, 202, started.text);
    const t = started.body.data;
    assert.equal(t.direction, 'to-cloud');
    assert.equal(t.status, 'running');
    assert.equal(started.headers.get('location'), `/api/projects/${p.id}/transfers/${t.id}`);
    // One at a time per project.
    const second = await api.post(`/api/projects/${p.id}/transfers`, { to: 'cloud', includeData: true });
    assert.equal(second.status, 409, second.text);

    const seen = await events(`${self.url}/api/projects/${p.id}/transfers/${t.id}/events`, team.owner.token);
    assert.equal(seen[0]!.event, 'snapshot');
    const last = seen.at(-1)!;
    assert.equal(last.event, 'complete');
    assert.equal(last.data.status, 'succeeded', JSON.stringify(last.data.error));
    assert.deepEqual(last.data.result.transferred.serviceData, ['cache']);
    const phases = seen.filter((e) => e.event === 'progress').map((e) => e.data);
    // The snapshot may already be past the first phase: what follows it only moves forward.
    for (const ph of phases) assert.equal(ph.service, 'cache');
    const load = phases.find((ph) => ph.phase === 'load');
    assert.ok(load, `a load phase: ${JSON.stringify(phases)}`);
    assert.ok(load.bytes > 0 && load.bytes === load.totalBytes, 'the whole dump was sent before the cloud loads it');

    const record = await api.get(`/api/projects/${p.id}/transfers/${t.id}`);
    assert.equal(record.status, 200);
    assert.equal(record.body.data.status, 'succeeded');
    const local = await self.ctx.db.selectFrom('projects').select('location').where('id', '=', p.id).executeTakeFirstOrThrow();
    assert.equal(local.location, 'cloud', 'the local record now stands for the cloud copy');
    const cloudId = record.body.data.result.cloudProjectId;
    const there = (await cloud.api(cloudOwner.token).get(`/api/projects/${cloudId}/services`)).body.data.find((x: any) => x.name === 'cache');
    const at = await serviceRunning(cloud, cloudOwner.token, cloudId, there.id, 120_000);
    const ccreds = (await cloud.api(cloudOwner.token).get(`/api/projects/${cloudId}/services/${there.id}/credentials`)).body.data;
    assert.equal((await cli(at, ccreds.password, 'get', 'greeting')).out.trim(), 'hello');
    assert.ok(!JSON.stringify(seen).includes(creds.password), 'no password in the events');

    // Another org's member sees no such transfer.
    const stranger = await createUser(self);
    assert.equal((await self.api(stranger.token).get(`/api/projects/${p.id}/transfers/${t.id}`)).status, 404);
  });

  it('refused before the 202: a stopped service with includeData is 409 naming includeData, a missing `to` is 400', async () => {
    const api = self.api(team.owner.token);
    const p = (await pair.shopProject()) as { id: string };
    const s = (await api.post(`/api/projects/${p.id}/services`, { kind: 'redis', name: 'idle' })).body.data;
    assert.equal((await api.patch(`/api/projects/${p.id}/services/${s.id}`, { stopped: true })).status, 200);
    const stopped = await api.post(`/api/projects/${p.id}/transfers`, { to: 'cloud', includeData: true });
    assert.equal(stopped.status, 409, stopped.text);
    assert.equal(stopped.body.error.field, 'includeData');
    const bad = await api.post(`/api/projects/${p.id}/transfers`, { includeData: true });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.error.field, 'to');
    assert.equal((await api.get(`/api/projects/${p.id}`)).body.data.location, 'local');
  });
});
