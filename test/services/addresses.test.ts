/**
 * A managed service keeps its address (contract section 19, issue 37): stopped and started, restarted,
 * and across a restart of the server, it listens on the same `internalHost` and port, so the
 * `DATABASE_URL` (`REDIS_URL`) its project's app started with stays valid. Sandbox runtime, the
 * host's Redis.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { execIn, serviceRunning } from './helpers.js';
import { createProject, createUser, type TestUser } from '../support/factories.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';

const root = process.getuid?.() === 0;

describe('a managed service keeps its address', { skip: root ? false : 'the sandbox networks need root' }, () => {
  let dir: string;
  let server: TestServer;
  let owner: TestUser;
  let pg: { url: string; drop(): Promise<void> } | undefined;
  // The same key across the server's restart: the service's sealed credentials open again.
  const secret = randomBytes(32).toString('base64');
  const start = () => startTestServer({ background: true, dataDir: path.join(dir, 'data'), databaseUrl: pg?.url, flags: { runtime: 'sandbox' }, env: { BERTH_SECRET_KEY: secret } });

  before(async () => {
    dir = tempDir('berth-svc-addr-');
    if (usingPostgres()) pg = await freshPostgresDatabase();
    server = await start();
    owner = await createUser(server);
  });
  after(async () => {
    await server?.close();
    await pg?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('across a stop and start, a restart and a restart of the server; the data is there each time', async () => {
    const p = await createProject(server, owner);
    const created = await server.api(owner.token).post(`/api/projects/${p.id}/services`, { kind: 'redis', name: 'cache' });
    assert.equal(created.status, 201, created.text);
    const id = created.body.data.id;
    const first = await serviceRunning(server, owner.token, p.id, id, 120_000);
    const url = (await server.api(owner.token).get(`/api/projects/${p.id}/services/${id}/credentials`)).body.data.url as string;
    const cli = (...args: string[]) => {
      const u = new URL(url);
      return execIn(u.hostname, '/usr/bin/redis-cli', ['--no-auth-warning', '-h', u.hostname, '-p', u.port, ...args], { REDISCLI_AUTH: decodeURIComponent(u.password) });
    };
    assert.match((await cli('set', 'k', 'kept')).out, /OK/);

    const same = async (what: string) => {
      const now = await serviceRunning(server, owner.token, p.id, id, 120_000);
      assert.deepEqual([now.internalHost, now.port], [first.internalHost, first.port], `the same address after ${what}`);
      // The URL an app got at the start answers.
      assert.equal((await cli('get', 'k')).out.trim(), 'kept', `the old URL answers after ${what}`);
    };
    const api = () => server.api(owner.token);
    assert.equal((await api().patch(`/api/projects/${p.id}/services/${id}`, { stopped: true })).body.data.status, 'stopped');
    assert.equal((await api().patch(`/api/projects/${p.id}/services/${id}`, { stopped: false })).status, 200);
    await same('a stop and a start');
    assert.equal((await api().post(`/api/projects/${p.id}/services/${id}/restart`)).status, 200);
    await same('a restart');
    await server.close();
    server = await start();
    await same("the server's restart");
  });
});
