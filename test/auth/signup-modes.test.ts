// Accounts (issue 14, contract section 10): who may sign up, and `berth admin create-user` never
// silently reuses an account or ignores --password.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres } from '../support/harness.js';
import { runCli, startServe } from '../support/cli.js';

const signup = (url: string, email: string) =>
  fetch(`${url}/api/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'a long password' }) });

test('self-hosted default: the first account signs up, then only invited emails (and they join the inviting org)', async () => {
  const server = await startTestServer({ env: { BERTH_SIGNUP: '' } });
  try {
    const first = await signup(server.url, 'first@example.test');
    assert.equal(first.status, 201, await first.text());
    const second = await signup(server.url, 'stranger@example.test');
    assert.equal(second.status, 403);
    const body = (await second.json()) as any;
    assert.equal(body.error.code, 'SIGNUP_CLOSED');
    // The owner invites an email: that email may sign up and is a member of the owner's org at once.
    const login = await fetch(`${server.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'first@example.test', password: 'a long password' }) });
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    const me = (await (await fetch(`${server.url}/api/auth/me`, { headers: { cookie } })).json()) as any;
    const inv = await fetch(`${server.url}/api/permissions/invite-with-grants`, { method: 'POST', headers: { cookie, origin: server.url, 'content-type': 'application/json' }, body: JSON.stringify({ email: 'Invited@Example.test', role: 'member' }) });
    assert.equal(inv.status, 201, await inv.text());
    const invited = await signup(server.url, 'invited@example.test');
    const text = await invited.text();
    assert.equal(invited.status, 201, text);
    const out = JSON.parse(text);
    assert.equal(out.data.orgId, me.data.org.id, 'the session opens in the inviting org');
    const cookie2 = (invited.headers.get('set-cookie') ?? '').split(';')[0]!;
    const me2 = (await (await fetch(`${server.url}/api/auth/me`, { headers: { cookie: cookie2 } })).json()) as any;
    assert.equal(me2.data.role, 'member');
  } finally {
    await server.close();
  }
});

test('BERTH_SIGNUP=closed refuses every signup; open accepts any; cloud mode defaults to open', async () => {
  const closed = await startTestServer({ env: { BERTH_SIGNUP: 'closed' } });
  try {
    const r = await signup(closed.url, 'a@example.test');
    assert.equal(r.status, 403);
    assert.equal(((await r.json()) as any).error.code, 'SIGNUP_CLOSED');
  } finally {
    await closed.close();
  }
  const cloud = await startTestServer({ env: { BERTH_SIGNUP: '', BERTH_MODE: 'cloud' } });
  try {
    for (const e of ['c1@example.test', 'c2@example.test']) assert.equal((await signup(cloud.url, e)).status, 201);
  } finally {
    await cloud.close();
  }
});

test('a bad BERTH_SIGNUP or BERTH_RUNTIME value, and the process runtime in cloud mode, stop the server with a clear message', async () => {
  await assert.rejects(startTestServer({ env: { BERTH_SIGNUP: 'sometimes' } }), /BERTH_SIGNUP must be/);
  await assert.rejects(startTestServer({ env: { BERTH_RUNTIME: 'vm' } }), /runtime must be/);
  await assert.rejects(startTestServer({ env: { BERTH_RUNTIME: 'process', BERTH_MODE: 'cloud' } }), /refused in cloud mode/);
});

test('GET /api/health answers the runtime driver and whether it can run builds and apps', async () => {
  const server = await startTestServer();
  try {
    const h = (await (await fetch(`${server.url}/api/health`)).json()) as any;
    assert.equal(h.data.runtime.driver, 'sandbox');
    assert.equal(typeof h.data.runtime.ready, 'boolean');
    if (!h.data.runtime.ready) assert.match(h.data.runtime.reason, /install|root|cgroup/);
  } finally {
    await server.close();
  }
  // The driver is made on first use and looks for bwrap then.
  process.env.BERTH_BWRAP_BIN = '/nonexistent/bwrap';
  const missing = await startTestServer();
  try {
    const h = (await (await fetch(`${missing.url}/api/health`)).json()) as any;
    assert.deepEqual(h.data.runtime.ready, false);
    assert.match(h.data.runtime.reason, /bubblewrap is not installed: install it \(Debian\/Ubuntu: apt-get install bubblewrap\)/);
  } finally {
    delete process.env.BERTH_BWRAP_BIN;
    await missing.close();
  }
});

test('admin create-user refuses an existing email without --existing, and with it sets --password', async () => {
  const dir = tempDir('berth-adm-');
  const pgDb = usingPostgres() ? await freshPostgresDatabase() : null;
  const env: Record<string, string> = { BERTH_DATA_DIR: path.join(dir, 'data'), BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_EDGE_PORT: '0', ...(pgDb ? { DATABASE_URL: pgDb.url } : {}) };
  try {
    const a = await runCli(['admin', 'create-user', '--email', 'op@example.test', '--password', 'first password'], { env });
    assert.equal(a.code, 0, a.stderr);
    const again = await runCli(['admin', 'create-user', '--email', 'OP@example.test', '--password', 'second password'], { env });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists; pass --existing/);
    const reset = await runCli(['admin', 'create-user', '--email', 'op@example.test', '--password', 'second password', '--existing'], { env });
    assert.equal(reset.code, 0, reset.stderr);
    const serve = await startServe(['--port', '0'], env);
    try {
      const login = (password: string) => fetch(`${serve.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'op@example.test', password }) });
      assert.equal((await login('second password')).status, 200, 'the new password works');
      assert.equal((await login('first password')).status, 401, 'the old one does not');
      // The data dir and what the server wrote in it are not readable by other local users.
      assert.equal(statSync(env.BERTH_DATA_DIR!).mode & 0o077, 0);
      if (!pgDb) assert.equal(statSync(path.join(env.BERTH_DATA_DIR!, 'berth.db')).mode & 0o077, 0);
    } finally {
      await serve.stop();
    }
  } finally {
    await pgDb?.drop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
});
