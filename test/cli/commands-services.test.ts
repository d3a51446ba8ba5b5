// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * `berth services ls|create|rm|logs|connect` (contract section 19, issue 37 point 5) against a server on the
 * sandbox runtime, where the host's Debian Redis really runs: create with resources, list, the log
 * followed live as the server starts, delete keeping its data, the exit codes of bad input, and
 * `connect`: psql and redis-cli on this machine through the API's tunnel.
 */
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { clientCommand } from '../../src/cli/commands/services-connect.js';
import { createProject, createUser, type TestProject, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { cliUser, lines, type CliUser } from './commands-support.js';

const root = process.getuid?.() === 0;

describe('berth services', { skip: root ? false : 'the sandbox runs services under project uids only as root' }, () => {
  let dir: string;
  let server: TestServer;
  let alice: TestUser;
  let project: TestProject;
  let cli: CliUser;

  before(async () => {
    dir = tempDir('berth-cli-services-');
    server = await startTestServer({ background: true, dataDir: path.join(dir, 'data'), flags: { runtime: 'sandbox' } });
    alice = await createUser(server, { team: true });
    project = await createProject(server, alice, { name: 'Shop' });
    cli = cliUser(server, alice.token);
  });
  after(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('create starts a Redis with the resources asked for; logs --follow prints its start live; ls shows it running', async () => {
    const created = await cli.run(['services', 'create', project.slug, 'redis', 'cache', '--memory-mb', '64', '--cpu-cores', '0.25', '--json']);
    assert.equal(created.code, 0, created.stderr);
    const s = JSON.parse(created.stdout);
    assert.equal(s.kind, 'redis');
    assert.equal(s.name, 'cache');
    assert.deepEqual(s.resources, { cpuCores: 0.25, memoryMb: 64, diskMb: 1024 });
    const follow = cli.start(['services', 'logs', project.slug, 'cache', '--follow']);
    try {
      await waitFor(() => follow.stdout().includes('[berth] ready'), 'the ready line, live', 90_000, 100);
    } finally {
      await follow.stop();
    }
    await waitFor(async () => (await server.api(alice.token).get(`/api/projects/${project.id}/services/${s.id}`)).body.data.status === 'running', 'running', 30_000, 100);
    const [table, json, logs] = await Promise.all([
      cli.run(['services', 'ls', project.slug]),
      cli.run(['services', 'ls', project.slug, '--json']),
      cli.run(['services', 'logs', project.slug, 'cache', '-n', '500', '--json']),
    ]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(lines(table.stdout)[0]!, /^NAME\s+KIND\s+VERSION\s+STATUS\s+ADDRESS/);
    assert.match(table.stdout, /\ncache\s+redis\s+\d+\.\d+\s+running\s+10\.88\.\d+\.\d+:6379\s+0\.25\s+64 MB\s+1024 MB/);
    assert.deepEqual(JSON.parse(json.stdout).map((x: { name: string }) => x.name), ['data', 'cache']);
    assert.equal(logs.code, 0, logs.stderr);
    assert.ok(lines(logs.stdout).map((l) => JSON.parse(l).line).some((l: string) => l.includes('[berth] ready')), logs.stdout);
  });

  it('rm --keep-volume deletes the service and keeps its data folder; rm of a name that is not there says what there is', async () => {
    const made = await server.api(alice.token).post(`/api/projects/${project.id}/services`, { kind: 'redis', name: 'sessions', resources: { memoryMb: 64 } });
    assert.equal(made.status, 201, made.text);
    const volume = server.ctx.state.services.runner!.volumeDir({ projectId: project.id, id: made.body.data.id });
    await waitFor(() => existsSync(volume), 'its data folder', 30_000, 100);
    const rm = await cli.run(['services', 'rm', project.slug, 'sessions', '--keep-volume']);
    assert.equal(rm.code, 0, rm.stderr);
    assert.match(rm.stdout, /deleted sessions from shop \(its data folder is kept on the server\)/);
    assert.ok(existsSync(volume), 'the data stays');
    assert.equal((await server.api(alice.token).get(`/api/projects/${project.id}/services/${made.body.data.id}`)).status, 404);
    const again = await cli.run(['services', 'rm', project.slug, 'sessions']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /no service "sessions" in shop \(it has: data/);
  });

  it('connect runs psql through the API tunnel: --command answers; the password is in no argument', async () => {
    const made = await cli.run(['services', 'create', project.slug, 'postgres', 'db', '--memory-mb', '256', '--json']);
    assert.equal(made.code, 0, made.stderr);
    const id = JSON.parse(made.stdout).id;
    await waitFor(
      async () => {
        const r = (await server.api(alice.token).get(`/api/projects/${project.id}/services/${id}`)).body.data;
        if (r.status === 'failed') throw new Error(`failed: ${r.error}`);
        return r.status === 'running';
      },
      'postgres running',
      120_000,
      200,
    );
    const res = await cli.run(['services', 'connect', project.slug, 'db', '--command', "select 40 + 2 as answer, current_user, inet_server_port()"]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /answer \| current_user \| inet_server_port/);
    assert.match(res.stdout, /\n\s*42 \| app\s+\|\s+5432\n/, 'the service itself answered, as its user');
    const redis = await cli.run(['services', 'connect', project.slug, 'cache', '--command', 'ping']);
    assert.equal(redis.code, 0, redis.stderr);
    assert.equal(redis.stdout.trim(), 'PONG');
    const audit = await server.ctx.db.selectFrom('auditEvents').selectAll().where('action', '=', 'project.service.connect').execute();
    assert.equal(audit.length, 2, 'each tunnel is audited');
    // What the clients are run with: the password in their environment, never in an argument.
    const creds = { username: 'app', password: 'a-secret-password', database: 'db' };
    for (const kind of ['postgres', 'mysql', 'redis'] as const) {
      const c = clientCommand(kind, 40000, creds, 'select 1');
      assert.ok(!c.args.some((a) => a.includes(creds.password)), `${kind}: ${c.args.join(' ')}`);
      assert.deepEqual(Object.values(c.env), [creds.password]);
    }
  });

  it('the tunnel needs the Upgrade, project admin, and a running service; what the database refuses it prints', async () => {
    const member = await createUser(server, { orgId: alice.orgId, role: 'member' });
    const list = (await server.api(alice.token).get(`/api/projects/${project.id}/services`)).body.data;
    const db = list.find((s: { name: string }) => s.name === 'db');
    const url = `${server.url}/api/projects/${project.id}/services/${db.id}/tunnel`;
    const plain = await server.api(alice.token).post(`/api/projects/${project.id}/services/${db.id}/tunnel`);
    assert.equal(plain.status, 400, plain.text);
    assert.equal(plain.body.error.field, 'headers.upgrade');
    const upgrade = (token: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, connection: 'Upgrade', upgrade: 'berth-tcp' } });
        req.on('upgrade', (_res, socket) => (socket.destroy(), resolve({ status: 101, body: '' })));
        req.on('response', (res) => {
          let body = '';
          res.on('data', (d) => (body += d)).on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject);
        req.end();
      });
    const refused = await upgrade(member.token);
    assert.equal(refused.status, 403, refused.body);
    assert.equal(JSON.parse(refused.body).error.code, 'FORBIDDEN');
    assert.equal((await upgrade(alice.token)).status, 101);
    assert.equal((await server.api(alice.token).patch(`/api/projects/${project.id}/services/${db.id}`, { stopped: true })).status, 200);
    const stopped = await upgrade(alice.token);
    assert.equal(stopped.status, 409, stopped.body);
    assert.match(JSON.parse(stopped.body).error.message, /not running/);
    const [asMember, notRunning] = await Promise.all([
      cliUser(server, member.token).run(['services', 'connect', project.slug, 'cache', '--command', 'ping']),
      cli.run(['services', 'connect', project.slug, 'db', '--command', 'select 1']),
    ]);
    assert.equal(asMember.code, 1);
    assert.match(asMember.stderr, /\[FORBIDDEN\]/);
    assert.equal(notRunning.code, 1);
    assert.match(notRunning.stderr, /service db is stopped: it must be running to connect/);
    const badSql = await cli.run(['services', 'connect', project.slug, 'cache', '--command', 'nosuchcommand']);
    assert.match(badSql.stdout + badSql.stderr, /unknown command/i);
  });

  it('bad input is a usage error (2) naming the argument; what the server refuses exits 1 with its field', async () => {
    const [kind, memory, cpu, version, foreign] = await Promise.all([
      cli.run(['services', 'create', project.slug, 'oracle', 'db']),
      cli.run(['services', 'create', project.slug, 'redis', 'c2', '--memory-mb', 'lots']),
      cli.run(['services', 'create', project.slug, 'redis', 'c2', '--cpu-cores', '9']),
      cli.run(['services', 'create', project.slug, 'postgres', 'db', '--version', '9.6']),
      cli.run(['services', 'ls', 'no-such-project']),
    ]);
    assert.equal(kind.code, 2);
    assert.match(kind.stderr, /KIND must be one of postgres, mysql, redis, mongodb/);
    assert.equal(memory.code, 2);
    assert.match(memory.stderr, /--memory-mb must be a whole number/);
    assert.equal(cpu.code, 2);
    assert.match(cpu.stderr, /--cpu-cores must be a number from 0.1 to 4/);
    assert.equal(version.code, 1);
    assert.match(version.stderr, /\(field: version\) \[VALIDATION_FAILED\]/);
    assert.equal(foreign.code, 1);
    assert.match(foreign.stderr, /no project "no-such-project"/);
  });
});
