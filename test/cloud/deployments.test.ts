import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it, type TestContext } from 'node:test';
import { resourceInfo, type AnyRoute, type ModuleDef } from '../../src/http/route.js';
import { newId } from '../../src/lib/ids.js';
import { createLogger } from '../../src/lib/logger.js';
import { cloudRecordRoutes } from '../../src/modules/cloud/cloud-records.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { readSse } from '../backups/helpers.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { waitFor } from '../support/wait.js';
import { createDeployment, createTeam, createUser, createGrant, type TestOrg, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';

/**
 * Routes named by a deployment id (`/api/deployments/:id`, its build logs, cancel, `build/access`),
 * for a project that lives on the cloud (docs/cloud.md, Forwarding): two real servers, a cloud
 * (running its jobs worker and runtime, so the deployment really builds there) and a self-hosted
 * instance linked to it.
 */

interface Seen {
  method: string;
  url: string;
  requestId: string;
  authorization: string | undefined;
}

/** Loaded on the cloud: records every request that passed the cloud's gate on a routed record (and public routes). */
function recorderModule(seen: Seen[]): ModuleDef {
  return {
    name: 'recorder',
    routes: [],
    async forward(_def, req, _reply, ctx) {
      if (ctx.config.mode === 'cloud') seen.push({ method: req.method, url: req.url, requestId: req.id, authorization: req.headers.authorization });
      return false;
    },
  };
}

const stripId = (b: any) => ({ ...b?.error, requestId: undefined });
const TERMINAL = ['ready', 'failed', 'cancelled', 'superseded'];

describe('routes named by a cloud deployment\'s id, through a linked self-hosted instance', () => {
  let cloud: TestServer;
  let self: TestServer;
  let cloudOwner: TestUser;
  let team: TestOrg;
  let otherOrg: TestUser;
  /** Requests that passed the cloud's gate on a record, or reached a public route there. */
  const seen: Seen[] = [];
  /** Every request that reached the cloud at all (lookups included), as `METHOD /path`. */
  const reached: string[] = [];
  const logged: string[] = [];
  const sink = () => createLogger('trace', new Writable({ write: (chunk, _enc, cb) => (logged.push(String(chunk)), cb()) }));
  /** Which credential a request reached the cloud with. */
  const sentWith = (s: Seen) => (s.authorization === `Bearer ${cloudOwner.token}` ? 'link' : s.authorization === undefined ? 'none' : s.authorization);
  const unknownId = () => `dpl_unknown${randomBytes(7).toString('hex')}`;

  async function toCloud(owner: TestUser, name: string, extra: Record<string, unknown> = {}): Promise<{ id: string; cloudId: string }> {
    const created = await self.api(owner.token).post('/api/projects', { name, ...extra });
    assert.equal(created.status, 201, created.text);
    const t = await self.api(owner.token).post(`/api/projects/${created.body.data.id}/transfer/to-cloud`);
    assert.equal(t.status, 200, t.text);
    return { id: created.body.data.id, cloudId: t.body.data.cloudProjectId };
  }

  /** The build-log lines of a deployment, read on the cloud itself. */
  async function cloudLogLines(deploymentId: string): Promise<string[]> {
    const res = await cloud.api(cloudOwner.token).get(`/api/deployments/${deploymentId}/logs`);
    return res.status === 200 ? (res.body.data as Array<{ line: string }>).map((l) => l.line) : [];
  }

  /**
   * A fresh project of the team moved to the cloud, with a build that prints a line and then runs until
   * it is cancelled. Its cloud copy's source is a folder on the cloud host (a source type that cannot be
   * transferred, so this writes it there directly; the build runs it as any local folder).
   */
  async function cloudProject(): Promise<{ projectId: string; cloudId: string }> {
    const { id: projectId, cloudId } = await toCloud(team.owner, `Shipyard-${randomBytes(3).toString('hex')}`, {
      buildCommand: 'node -e "console.log(\'building slowly\'); setTimeout(() => {}, 60000)"',
      startCommand: 'npm start',
    });
    const appDir = writeTinyApp(path.join(cloud.dataDir, 'local', `shipyard-${cloudId}`));
    await cloud.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: appDir }).where('id', '=', cloudId).execute();
    return { projectId, cloudId };
  }

  /** Cancels a deployment on the cloud itself when test `t` ends (its build would otherwise run on for a minute). */
  function cancelAtEnd(t: TestContext, deploymentId: string): void {
    t.after(async () => {
      await cloud.api(cloudOwner.token).post(`/api/deployments/${deploymentId}/cancel`).catch(() => {});
    });
  }

  /** A deployment of a fresh cloud project (`cloudProject`), made on the cloud, whose build has printed its line and runs on until the test ends. */
  async function buildingDeployment(t: TestContext): Promise<{ projectId: string; cloudId: string; deploymentId: string }> {
    const p = await cloudProject();
    const created = await cloud.api(cloudOwner.token).post('/api/deployments', { projectId: p.cloudId });
    assert.equal(created.status, 202, created.text);
    const deploymentId: string = created.body.data.id;
    cancelAtEnd(t, deploymentId);
    await waitFor(async () => (await cloudLogLines(deploymentId)).includes('building slowly'), 'the cloud build to start', 20_000, 100);
    return { ...p, deploymentId };
  }

  /** A deployment of a fresh cloud project that has already ended (cancelled), written on the cloud; no build runs. */
  async function endedDeployment(): Promise<{ projectId: string; cloudId: string; deploymentId: string }> {
    const { id: projectId, cloudId } = await toCloud(team.owner, `Moored-${randomBytes(3).toString('hex')}`);
    const deploymentId = await createDeployment(cloud, { id: cloudId, orgId: cloudOwner.orgId }, { id: newId('dpl'), status: 'cancelled' });
    return { projectId, cloudId, deploymentId };
  }

  before(async () => {
    cloud = await startTestServer({ flags: { mode: 'cloud' }, background: true, logLevel: 'trace', build: { modules: [recorderModule(seen)], logger: sink() } });
    await getRuntime(cloud.ctx).restored;
    cloud.app.server.on('request', (req) => reached.push(`${req.method} ${String(req.url).split('?')[0]}`));
    cloudOwner = await createUser(cloud);
    self = await startTestServer({ logLevel: 'trace', env: { BERTH_CLOUD_URL: cloud.url, BERTH_CLOUD_TOKEN: cloudOwner.token }, build: { logger: sink() } });
    team = await createTeam(self);
    otherOrg = await createUser(self);
    // The other local org has a cloud project of its own (in the same cloud org, through the same link).
    await toCloud(otherOrg, 'Theirs');
  });
  after(async () => {
    await self?.close();
    await cloud?.close().catch(() => {});
  });

  it('every registered route that names a deployment (in its path or its body) is forwarded for a cloud deployment, and checks a project tag', () => {
    const defs: AnyRoute[] = self.app.berth.modules.flatMap((m) => m.routes);
    const key = (d: AnyRoute) => `${d.method} ${d.url}`;
    const bodyNames = (d: AnyRoute) => !!(d.schema?.body as { properties?: Record<string, unknown> } | undefined)?.properties?.deploymentId;
    // A route that takes a deployment id declares it as its resource, so the gate (and the cloud) can read it.
    for (const d of defs) if (d.url.startsWith('/api/deployments/:id') || bodyNames(d)) assert.equal(resourceInfo(d.resource)?.kind, 'deployment', key(d));
    const naming = defs.filter((d) => resourceInfo(d.resource)?.kind === 'deployment');
    assert.deepEqual(naming.map(key).sort(), [
      'GET /api/deployments/:id',
      'GET /api/deployments/:id/logs',
      'GET /api/deployments/:id/logs/stream',
      'POST /api/deployments/:id/cancel',
      'POST /api/deployments/build/access',
    ]);
    const forwarded = cloudRecordRoutes(defs);
    assert.deepEqual(forwarded.filter((d) => resourceInfo(d.resource)?.kind === 'deployment').map(key).sort(), naming.map(key).sort());
    // The deployments area's check is the route's own tag, on the deployment's project.
    for (const d of naming) assert.ok(d.tag?.startsWith('project:deployment:'), key(d));
  });

  it('the cloud makes the deployment (the self-hosted instance refuses to); the forwarded list shows it', async (t) => {
    const { projectId, cloudId } = await cloudProject();
    const refused = await self.api(team.member.token).post('/api/deployments', { projectId });
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.error.field, 'projectId');

    const created = await cloud.api(cloudOwner.token).post('/api/deployments', { projectId: cloudId });
    assert.equal(created.status, 202, created.text);
    const deploymentId = created.body.data.id;
    cancelAtEnd(t, deploymentId);
    assert.equal(await self.ctx.db.selectFrom('deployments').select('id').where('id', '=', deploymentId).executeTakeFirst(), undefined);

    const list = await self.api(team.member.token).get(`/api/projects/${projectId}/deployments`);
    assert.equal(list.status, 200, list.text);
    const listed = (list.body.data as Array<{ id: string; projectId: string }>).find((d) => d.id === deploymentId);
    assert.ok(listed, 'the cloud deployment is listed');
    assert.equal(listed.projectId, cloudId);
    // The build runs on the cloud and prints its first line.
    await waitFor(async () => (await cloudLogLines(deploymentId)).includes('building slowly'), 'the cloud build to start', 20_000, 100);
  });

  it('gets the deployment by its id through the link, under the caller\'s request id', async (t) => {
    const { cloudId, deploymentId } = await buildingDeployment(t);
    const n = seen.length;
    const got = await self.api(team.member.token).get(`/api/deployments/${deploymentId}`);
    assert.equal(got.status, 200, got.text);
    assert.equal(got.body.data.id, deploymentId);
    assert.equal(got.body.data.projectId, cloudId);
    assert.equal(got.body.data.status, 'building');
    assert.deepEqual(seen.slice(n).map((s) => `${s.method} ${s.url} ${sentWith(s)}`), [`GET /api/deployments/${deploymentId} link`]);
    assert.equal(got.headers.get('x-request-id'), seen.at(-1)!.requestId);
    assert.deepEqual(got.body, (await cloud.api(cloudOwner.token).get(`/api/deployments/${deploymentId}`)).body, 'the cloud\'s own answer');
  });

  it('the lookup route answers a deployment\'s project on the cloud only, for the caller\'s org', async () => {
    const { cloudId, deploymentId } = await endedDeployment();
    const ok = await cloud.api(cloudOwner.token).get(`/api/cloud/refs/deployment/${deploymentId}`);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body.data, { projectId: cloudId });
    const stranger = await createUser(cloud);
    const theirs = await cloud.api(stranger.token).get(`/api/cloud/refs/deployment/${deploymentId}`);
    assert.equal(theirs.status, 404);
    const missing = await cloud.api(stranger.token).get(`/api/cloud/refs/deployment/${unknownId()}`);
    assert.equal(missing.status, 404);
    assert.deepEqual(stripId(theirs.body), stripId(missing.body));
    const restricted = await createUser(cloud, { orgId: cloudOwner.orgId, role: 'restricted' });
    assert.equal((await cloud.api(restricted.token).get(`/api/cloud/refs/deployment/${deploymentId}`)).status, 403);
    assert.equal((await self.api(team.owner.token).get(`/api/cloud/refs/deployment/${deploymentId}`)).status, 404, 'cloud only');
  });

  it('reads its build logs through the link with a credential, as JSON and as an SSE stream', async (t) => {
    const { deploymentId } = await buildingDeployment(t);
    const n = seen.length;
    const logs = await self.api(team.member.token).get(`/api/deployments/${deploymentId}/logs`);
    assert.equal(logs.status, 200, logs.text);
    assert.ok((logs.body.data as Array<{ line: string }>).some((l) => l.line === 'building slowly'), logs.text);
    // The query goes along.
    const one = await self.api(team.member.token).get(`/api/deployments/${deploymentId}/logs?limit=1`);
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.data.length, 1);

    const sse = await readSse(`${self.url}/api/deployments/${deploymentId}/logs/stream?follow=false`, team.member.token, 10_000);
    assert.equal(sse.status, 200);
    assert.match(String(sse.contentType), /text\/event-stream/);
    assert.ok(sse.events.some((e) => e.event === 'log' && e.data.line === 'building slowly'), sse.raw);
    assert.deepEqual(
      seen.slice(n).map((s) => `${s.method} ${s.url} ${sentWith(s)}`),
      [`GET /api/deployments/${deploymentId}/logs link`, `GET /api/deployments/${deploymentId}/logs?limit=1 link`, `GET /api/deployments/${deploymentId}/logs/stream?follow=false link`],
    );
  });

  it('build tokens: build/access and deployment-session mint the cloud\'s tokens, which read the logs through the link without a credential', async (t) => {
    const { projectId, deploymentId } = await buildingDeployment(t);
    const access = await self.api(team.member.token).post('/api/deployments/build/access', { deploymentId });
    assert.equal(access.status, 200, access.text);
    assert.match(access.body.data.token, /^berth_dpl_/);
    assert.ok(access.body.data.expiresAt);

    const n = seen.length;
    const byQuery = await self.api().get(`/api/deployments/${deploymentId}/logs?token=${access.body.data.token}`);
    assert.equal(byQuery.status, 200, byQuery.text);
    assert.ok((byQuery.body.data as Array<{ line: string }>).some((l) => l.line === 'building slowly'));
    const byBearer = await self.api(access.body.data.token).get(`/api/deployments/${deploymentId}/logs`);
    assert.equal(byBearer.status, 200, byBearer.text);
    // Sent as they came: the token is the credential, the link's is not added.
    assert.deepEqual(
      seen.slice(n).map((s) => `${s.url} ${sentWith(s)}`),
      [`/api/deployments/${deploymentId}/logs?token=${access.body.data.token} none`, `/api/deployments/${deploymentId}/logs Bearer ${access.body.data.token}`],
    );

    const session = await self.api(team.member.token).post(`/api/projects/${projectId}/deployment-session`);
    assert.equal(session.status, 200, session.text);
    assert.equal(session.body.data.deploymentId, deploymentId);
    const sse = await readSse(`${self.url}/api/deployments/${deploymentId}/logs/stream?follow=false`, session.body.data.token, 10_000);
    assert.equal(sse.status, 200, sse.raw);
    assert.ok(sse.events.some((e) => e.event === 'log' && e.data.line === 'building slowly'), sse.raw);

    // A wrong token is the cloud's 401; with an unknown id it is this instance's, the same answer.
    const wrong = await self.api().get(`/api/deployments/${deploymentId}/logs?token=berth_dpl_wrong${randomBytes(8).toString('hex')}`);
    assert.equal(wrong.status, 401, wrong.text);
    const wrongHere = await self.api().get(`/api/deployments/${unknownId()}/logs?token=berth_dpl_wrong${randomBytes(8).toString('hex')}`);
    assert.equal(wrongHere.status, 401, wrongHere.text);
    assert.deepEqual(stripId(wrong.body), stripId(wrongHere.body));
    // Neither a token nor a credential: this instance's 401, nothing asked.
    const before = reached.length;
    assert.equal((await self.api().get(`/api/deployments/${deploymentId}/logs`)).status, 401);
    assert.deepEqual(reached.slice(before), []);
  });

  it('checks local rights before anything but the lookup is sent: a restricted member without a grant gets 403', async (t) => {
    const { projectId, deploymentId } = await buildingDeployment(t);
    const n = seen.length;
    const r0 = reached.length;
    const r = self.api(team.restricted.token);
    for (const res of [
      await r.get(`/api/deployments/${deploymentId}`),
      await r.post(`/api/deployments/${deploymentId}/cancel`),
      await r.get(`/api/deployments/${deploymentId}/logs`),
      await r.get(`/api/deployments/${deploymentId}/logs/stream?follow=false`),
      await r.post('/api/deployments/build/access', { deploymentId }),
    ]) {
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.error.code, 'FORBIDDEN');
    }
    assert.deepEqual(seen.slice(n), [], 'none of these reached a route on the cloud');
    assert.deepEqual(reached.slice(r0), Array(5).fill(`GET /api/cloud/refs/deployment/${deploymentId}`), 'only the lookups were sent');
    const row = await cloud.ctx.db.selectFrom('deployments').select('status').where('id', '=', deploymentId).executeTakeFirstOrThrow();
    assert.equal(row.status, 'building');

    // A read grant on the local record of the cloud project: reads go through, cancel does not.
    await createGrant(self, team.restricted, 'project', projectId, ['read']);
    const read = await r.get(`/api/deployments/${deploymentId}`);
    assert.equal(read.status, 200, read.text);
    assert.equal((await r.get(`/api/deployments/${deploymentId}/logs`)).status, 200);
    assert.equal((await r.post('/api/deployments/build/access', { deploymentId })).status, 200);
    assert.equal((await r.post(`/api/deployments/${deploymentId}/cancel`)).status, 403);
    assert.deepEqual(seen.slice(n).map((s) => `${s.method} ${s.url}`), [`GET /api/deployments/${deploymentId}`, `GET /api/deployments/${deploymentId}/logs`]);
  });

  it('another local org gets 404, the same answer as an unknown id, and nothing is forwarded', async () => {
    const { deploymentId } = await endedDeployment();
    const n = seen.length;
    const o = self.api(otherOrg.token);
    const targets: Array<[string, (id: string) => string, ((id: string) => unknown)?]> = [
      ['GET', (id) => `/api/deployments/${id}`],
      ['POST', (id) => `/api/deployments/${id}/cancel`],
      ['GET', (id) => `/api/deployments/${id}/logs`],
      ['GET', (id) => `/api/deployments/${id}/logs/stream?follow=false`],
      ['POST', () => '/api/deployments/build/access', (id) => ({ deploymentId: id })],
    ];
    for (const [method, url, body] of targets) {
      const res = await o.request(method, url(deploymentId), body?.(deploymentId));
      assert.equal(res.status, 404, `${method} ${url(deploymentId)}: ${res.text}`);
      const id = unknownId();
      const unknown = await o.request(method, url(id), body?.(id));
      assert.equal(unknown.status, 404);
      assert.deepEqual(stripId(res.body), stripId(unknown.body), 'another org\'s deployment and an unknown id answer the same body');
      // The org that does have the project on the cloud: an unknown id is 404 too.
      assert.equal((await self.api(team.owner.token).request(method, url(id), body?.(id))).status, 404);
    }
    assert.deepEqual(seen.slice(n), []);
  });

  it('cancels the running deployment through the link: its live log stream closes; cancelling again is the cloud\'s 409', async (t) => {
    const { deploymentId } = await buildingDeployment(t);
    const n = seen.length;
    const stream = readSse(`${self.url}/api/deployments/${deploymentId}/logs/stream`, team.member.token, 15_000);
    // The cloud holds the live stream open before the cancel.
    await waitFor(async () => seen.slice(n).some((s) => s.url === `/api/deployments/${deploymentId}/logs/stream`), 'the live stream to reach the cloud', 5000);

    const cancelled = await self.api(team.member.token).post(`/api/deployments/${deploymentId}/cancel`);
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.data.id, deploymentId);
    assert.equal(cancelled.body.data.status, 'cancelled');
    const row = await cloud.ctx.db.selectFrom('deployments').select('status').where('id', '=', deploymentId).executeTakeFirstOrThrow();
    assert.equal(row.status, 'cancelled');

    const sse = await stream;
    assert.equal(sse.status, 200);
    const lines = sse.events.filter((e) => e.event === 'log').map((e) => e.data.line);
    assert.ok(lines.includes('building slowly'), sse.raw);
    assert.ok(lines.includes('[berth] cancelled'), sse.raw);

    const again = await self.api(team.member.token).post(`/api/deployments/${deploymentId}/cancel`);
    assert.equal(again.status, 409, again.text);
    assert.equal(again.body.error.code, 'CONFLICT');
    const got = await self.api(team.member.token).get(`/api/deployments/${deploymentId}`);
    assert.ok(TERMINAL.includes(got.body.data.status));
    assert.equal(got.body.data.status, 'cancelled');
  });

  // Closes the shared cloud: the last test that needs it.
  it('when the cloud does not answer: 503 cloud_unreachable; an org without cloud projects still gets its 404', async () => {
    const { deploymentId } = await endedDeployment();
    const loner = await createUser(self);
    const token = (await self.api(team.member.token).post('/api/deployments/build/access', { deploymentId })).body.data.token as string;
    cloud.app.server.closeAllConnections();
    await cloud.close();
    const m = self.api(team.member.token);
    for (const res of [
      await m.get(`/api/deployments/${deploymentId}`),
      await m.post(`/api/deployments/${deploymentId}/cancel`),
      await m.get(`/api/deployments/${deploymentId}/logs`),
      await m.get(`/api/deployments/${deploymentId}/logs/stream?follow=false`),
      await m.post('/api/deployments/build/access', { deploymentId }),
      await self.api().get(`/api/deployments/${deploymentId}/logs?token=${token}`),
    ]) {
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.error.code, 'cloud_unreachable');
      assert.ok(res.body.error.requestId);
    }
    const none = await self.api(loner.token).get(`/api/deployments/${deploymentId}`);
    assert.equal(none.status, 404, 'no round trip for an org that has nothing on the cloud');
    assert.equal((await self.api(loner.token).get(`/api/deployments/${deploymentId}/logs`)).status, 404);
  });

  it('neither server logged the link token or a build token', () => {
    const all = logged.join('');
    assert.ok(all.length > 0, 'the servers logged something');
    assert.ok(!all.includes(cloudOwner.token), 'the link token is not in the logs');
    assert.ok(!/berth_dpl_[A-Za-z0-9_-]{20,}/.test(all), 'no build token is in the logs');
  });
});
