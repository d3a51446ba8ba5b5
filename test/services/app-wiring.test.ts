// @store-independent: what it checks is the sandbox's wiring and network isolation of services, the same on either store (their records are checked on PostgreSQL by services/managed-api).
/**
 * A project's app and builds use its managed services (contract section 19, issue 37 point 3) on the
 * `sandbox` runtime: the build gets `DATABASE_URL` (its migration creates the table through the real
 * `pg` package it installed from the npm registry; the password never shows in the build log), the
 * deployed app writes a row through `DATABASE_URL` and reads it back over HTTP through the edge, and
 * talks to Redis through `REDIS_URL`. Another project's app probing the service's address finds it
 * unreachable, and so does the host (a plain connect from this process, root like the server).
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '60';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { createUser, type TestUser } from '../support/factories.js';
import { edgeRequest } from '../support/http.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

const root = process.getuid?.() === 0;

/** `GET /probe?host=&port=`: whether a TCP connection from inside the app's box opens within 3 s. */
const PROBE = `
function probe(host, port) {
  return new Promise((resolve) => {
    const s = require('node:net').connect({ host, port: Number(port) });
    const done = (answer) => { s.destroy(); resolve(answer); };
    s.setTimeout(3000, () => done('unreachable'));
    s.once('connect', () => done('connected'));
    s.once('error', () => done('unreachable'));
  });
}
`;

/** The app of project A: a migration in its build, rows through `pg`, Redis through a raw socket. */
const APP: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'notes', version: '1.0.0', private: true, scripts: { build: 'node migrate.js', start: 'node server.js' }, dependencies: { pg: '8.23.1' } }, null, 2),
  'migrate.js': [
    "const { Client } = require('pg');",
    '(async () => {',
    "  console.log('migrating ' + process.env.DATABASE_URL + ' as ' + process.env.PGUSER + ' with ' + process.env.PGPASSWORD);",
    '  const c = new Client({ connectionString: process.env.DATABASE_URL });',
    '  await c.connect();',
    "  await c.query('create table if not exists notes (body text not null)');",
    '  await c.end();',
    "  console.log('migrated');",
    '})().catch((e) => { console.error(e.message); process.exit(1); });',
    '',
  ].join('\n'),
  'server.js': [
    "const { Pool } = require('pg');",
    PROBE,
    'const pool = new Pool({ connectionString: process.env.DATABASE_URL });',
    '/** Inline commands to Redis over a plain socket: AUTH, SET, GET, QUIT; the replies as one string. */',
    'function redis(key, value) {',
    '  const u = new URL(process.env.REDIS_URL);',
    '  return new Promise((resolve, reject) => {',
    "    const s = require('node:net').connect({ host: u.hostname, port: Number(u.port) });",
    "    let out = '';",
    "    s.on('data', (c) => { out += c; });",
    "    s.on('error', reject);",
    "    s.on('end', () => resolve(out));",
    "    s.write(`AUTH ${decodeURIComponent(u.username)} ${decodeURIComponent(u.password)}\\r\\nSET ${key} ${value}\\r\\nGET ${key}\\r\\nQUIT\\r\\n`);",
    '  });',
    '}',
    "require('node:http').createServer(async (req, res) => {",
    "  const url = new URL(req.url, 'http://app');",
    '  try {',
    "    if (url.pathname === '/write') { await pool.query('insert into notes (body) values ($1)', [url.searchParams.get('body')]); return res.end('written'); }",
    "    if (url.pathname === '/read') return res.end(JSON.stringify((await pool.query('select body from notes order by body')).rows.map((r) => r.body)));",
    "    if (url.pathname === '/redis') return res.end(await redis('greeting', url.searchParams.get('value')));",
    "    if (url.pathname === '/probe') return res.end(await probe(url.searchParams.get('host'), url.searchParams.get('port')));",
    "    res.end('ok');",
    '  } catch (e) { res.statusCode = 500; res.end(String(e.message)); }',
    '}).listen(Number(process.env.PORT));',
    '',
  ].join('\n'),
};

/** The app of project B: no services of its own, only the probe. */
const PROBER: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'prober', version: '1.0.0', private: true, scripts: { start: 'node server.js' } }),
  'server.js': `${PROBE}\nrequire('node:http').createServer(async (req, res) => {\n  const url = new URL(req.url, 'http://app');\n  if (url.pathname === '/probe') return res.end(await probe(url.searchParams.get('host'), url.searchParams.get('port')));\n  res.end(String(process.env.DATABASE_URL === undefined));\n}).listen(Number(process.env.PORT));\n`,
};

function writeApp(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
}

/** Whether a plain TCP connection from this process (the host, root) opens within 3 s. */
function hostProbe(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (answer: string) => {
      s.destroy();
      resolve(answer);
    };
    s.setTimeout(3000, () => done('unreachable'));
    s.once('connect', () => done('connected'));
    s.once('error', () => done('unreachable'));
  });
}

describe('the app and builds of a project use its managed services; nothing else reaches them (sandbox runtime)', { skip: root ? false : 'the sandbox networks need root' }, () => {
  let dir: string;
  let server: TestServer;
  let owner: TestUser;
  let pg: { url: string; drop(): Promise<void> } | undefined;
  const api = () => server.api(owner.token);
  const edge = (host: string, p: string) => edgeRequest(getRuntime(server.ctx).edgePort(), host, p, { timeoutMs: 30_000 });

  before(async () => {
    dir = tempDir('berth-svcwire-');
    mkdirSync(path.join(dir, 'local'), { recursive: true });
    if (usingPostgres()) pg = await freshPostgresDatabase();
    server = await startTestServer({ background: true, dataDir: path.join(dir, 'data'), databaseUrl: pg?.url, flags: { runtime: 'sandbox' }, env: { BERTH_LOCAL_ROOTS: path.join(dir, 'local') } });
    await getRuntime(server.ctx).restored;
    owner = await createUser(server);
  });
  after(async () => {
    await server?.close();
    await pg?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function running(projectId: string, id: string): Promise<any> {
    return waitFor(
      async () => {
        const r = (await api().get(`/api/projects/${projectId}/services/${id}`)).body.data;
        if (r.status === 'failed') throw new Error(`failed: ${r.error}\n${server.ctx.state.services.runner!.logs(id).join('\n')}`);
        return r.status === 'running' ? r : null;
      },
      `service ${id} running`,
      120_000,
      200,
    );
  }

  async function importApp(name: string, files: Record<string, string>): Promise<any> {
    const src = path.join(dir, 'local', name);
    writeApp(src, files);
    const imported = await api().post('/api/projects/import', { path: src, name });
    assert.equal(imported.status, 201, imported.text);
    return imported.body.data;
  }

  async function release(projectId: string): Promise<string> {
    const started = await api().post('/api/deployments', { projectId });
    assert.equal(started.status, 202, started.text);
    const d = await waitForDeployment(api(), started.body.data.id, 300_000);
    const log = (await api().get(`/api/deployments/${d.id}/logs?limit=2000`)).body.data.map((l: { line: string }) => l.line).join('\n');
    assert.equal(d.status, 'ready', `${d.error}\n${log}`);
    return log;
  }

  it('a build migrates through DATABASE_URL with the real pg package, the app writes and reads rows and uses REDIS_URL; another project and the host cannot connect', async () => {
    const a = await importApp('notes', APP);
    const db = (await api().post(`/api/projects/${a.id}/services`, { kind: 'postgres', name: 'main-db' })).body.data;
    const cache = (await api().post(`/api/projects/${a.id}/services`, { kind: 'redis', name: 'cache' })).body.data;
    const dbRec = await running(a.id, db.id);
    const cacheRec = await running(a.id, cache.id);
    const creds = (await api().get(`/api/projects/${a.id}/services/${db.id}/credentials`)).body.data;
    const redisCreds = (await api().get(`/api/projects/${a.id}/services/${cache.id}/credentials`)).body.data;

    // The build: pg from the registry, a migration through DATABASE_URL from the build's own box, no password in its log.
    const log = await release(a.id);
    assert.match(log, /^migrated$/m, log);
    assert.match(log, /^migrating \*{8} as app with \*{8}$/m, 'the build got DATABASE_URL and the PG parts, redacted in its output');
    assert.ok(!log.includes(creds.password), 'the generated password is not in the build log');

    // The app, through the edge: a row written through DATABASE_URL and read back; Redis through REDIS_URL.
    const host = `${a.slug}.localhost`;
    assert.equal((await edge(host, '/write?body=first%20note')).text, 'written');
    assert.equal((await edge(host, '/write?body=second%20note')).text, 'written');
    assert.equal((await edge(host, '/read')).text, JSON.stringify(['first note', 'second note']));
    const redis = await edge(host, '/redis?value=hello');
    assert.equal(redis.text, '+OK\r\n+OK\r\n$5\r\nhello\r\n+OK\r\n', redis.text);
    assert.ok(redisCreds.password);
    // Its own service answers the probe (so "unreachable" below is the network's answer, not the probe's).
    assert.equal((await edge(host, `/probe?host=${dbRec.internalHost}&port=${dbRec.port}`)).text, 'connected');

    // Another project's app: no variables of A's services, and A's services are unreachable from its box.
    const b = await importApp('prober', PROBER);
    await release(b.id);
    const bHost = `${b.slug}.localhost`;
    assert.equal((await edge(bHost, '/')).text, 'true', 'no DATABASE_URL for a project without services');
    assert.equal((await edge(bHost, `/probe?host=${dbRec.internalHost}&port=${dbRec.port}`)).text, 'unreachable');
    assert.equal((await edge(bHost, `/probe?host=${cacheRec.internalHost}&port=${cacheRec.port}`)).text, 'unreachable');

    // The host: a plain connect from this process (root, the server's own uid) does not open either.
    assert.equal(await hostProbe(dbRec.internalHost, dbRec.port), 'unreachable');
    assert.equal(await hostProbe(cacheRec.internalHost, cacheRec.port), 'unreachable');

    // Stopped and started, a service keeps its address and its data; a redeploy finds both.
    await api().patch(`/api/projects/${a.id}/services/${db.id}`, { stopped: true });
    await api().patch(`/api/projects/${a.id}/services/${db.id}`, { stopped: false });
    await running(a.id, db.id);
    await release(a.id);
    assert.equal((await edge(host, '/read')).text, JSON.stringify(['first note', 'second note']));
  });
});
