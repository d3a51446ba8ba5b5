import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, startServe, type ServeProcess } from '../support/cli.js';
import { freshPostgresDatabase, tempDir, usingPostgres } from '../support/harness.js';

describe('berth CLI', () => {
  const dataDir = tempDir();
  const home = tempDir('berth-home-');
  let env: Record<string, string>;
  let pg: { url: string; drop(): Promise<void> } | undefined;
  let serve: ServeProcess;

  before(async () => {
    env = { BERTH_DATA_DIR: dataDir, BERTH_SECRET_KEY: randomBytes(32).toString('base64'), XDG_CONFIG_HOME: home, BERTH_EDGE_PORT: '0', BERTH_LOG_LEVEL: 'warn' };
    if (usingPostgres()) {
      pg = await freshPostgresDatabase();
      env.DATABASE_URL = pg.url;
    } else env.DATABASE_URL = '';
    serve = await startServe(['--port', '0', '--host', '127.0.0.1'], env);
  });
  after(async () => {
    await serve?.stop();
    await pg?.drop();
  });

  it('`serve --port 0` prints "api listening on http://HOST:PORT" and answers health', async () => {
    assert.match(serve.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await fetch(`${serve.url}/api/health`);
    const body = (await res.json()) as any;
    assert.equal(body.data.status, 'ok');
    assert.equal(body.data.database, usingPostgres() ? 'postgres' : 'sqlite');
  });

  it('a second `serve` on the same data dir fails with a clear message and leaves the first running', async () => {
    const second = await runCli(['serve', '--port', '0'], { env, timeoutMs: 30000 });
    assert.equal(second.code, 1);
    // On PostgreSQL several instances may share a data dir, each under its own name: the second unnamed one is refused.
    assert.match(second.stderr, usingPostgres() ? /already running as instance "default" on this data dir .*BERTH_INSTANCE_NAME/ : /already using this data dir/);
    assert.equal((await fetch(`${serve.url}/api/health`)).status, 200);
  });

  it('`admin create-user` prints one JSON line with userId, orgId and a working token', async () => {
    const res = await runCli(['admin', 'create-user', '--email', 'ops@example.test', '--password', 'ops-password-1', '--team'], { env });
    assert.equal(res.code, 0, res.stderr);
    const lines = res.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const out = JSON.parse(lines[0]!);
    assert.match(out.userId, /^usr_/);
    assert.match(out.orgId, /^org_/);
    assert.match(out.token, /^berth_pat_/);
    const me = (await (await fetch(`${serve.url}/api/auth/me`, { headers: { authorization: `Bearer ${out.token}` } })).json()) as any;
    assert.equal(me.data.role, 'owner');
    assert.equal(me.data.org.isTeam, true);
    // --org joins that org with --role.
    const joined = await runCli(['admin', 'create-user', '--email', 'dev@example.test', '--org', out.orgId, '--role', 'restricted'], { env });
    assert.equal(joined.code, 0, joined.stderr);
    const j = JSON.parse(joined.stdout);
    assert.equal(j.orgId, out.orgId);
    const me2 = (await (await fetch(`${serve.url}/api/auth/me`, { headers: { authorization: `Bearer ${j.token}` } })).json()) as any;
    assert.equal(me2.data.role, 'restricted');
  });

  it('`login --password-stdin` saves a token in ~/.config/berth (0600); `whoami` and `token create` use it', async () => {
    const login = await runCli(['login', '--server', serve.url, '--email', 'ops@example.test', '--password-stdin'], { env, input: 'ops-password-1\n' });
    assert.equal(login.code, 0, login.stderr);
    const file = path.join(home, 'berth', 'config.json');
    assert.ok(existsSync(file));
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const saved = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(saved.server, serve.url);
    assert.match(saved.token, /^berth_pat_/);
    const who = await runCli(['whoami'], { env });
    assert.equal(who.code, 0, who.stderr);
    assert.match(who.stdout, /ops@example\.test .* as owner/);
    const tok = await runCli(['token', 'create', '--name', 'ci', '--expires-in-days', '7'], { env });
    assert.equal(tok.code, 0, tok.stderr);
    assert.match(tok.stdout.trim(), /^berth_pat_[A-Za-z0-9_-]+$/);
  });

  it('`login` with a wrong password fails with a clear message', async () => {
    const bad = await runCli(['login', '--server', serve.url, '--email', 'ops@example.test', '--password-stdin'], { env, input: 'nope-nope\n' });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /wrong email or password/);
  });

  it('SIGTERM drains, exits 0 and releases the data dir', async () => {
    const code = await serve.stop('SIGTERM');
    assert.equal(code, 0);
    assert.ok(!existsSync(path.join(dataDir, 'berth.lock')));
    // The data dir can be served again.
    serve = await startServe(['--port', '0'], env);
    assert.equal((await fetch(`${serve.url}/api/health`)).status, 200);
  });
});

describe('berth serve configuration errors', () => {
  it('a too-short BERTH_SECRET_KEY stops start-up with a clear message', async () => {
    const res = await runCli(['serve', '--port', '0'], { env: { BERTH_DATA_DIR: tempDir(), BERTH_SECRET_KEY: 'c2hvcnQ=', DATABASE_URL: '' } });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /BERTH_SECRET_KEY is too short/);
  });
});
