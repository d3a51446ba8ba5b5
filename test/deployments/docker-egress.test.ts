// @store-independent: what it checks is the runtime's (sandbox, network, files), the same on either store.
/**
 * The docker runtime's egress (contract 18, issue 33 points 3 and 7), with real parts: a network
 * namespace of the test's own holds a link-local address (169.254.169.254, where a cloud VM's metadata
 * service is) and a private one (10.200.N.1), routed through the host over a veth pair, with a TCP
 * listener that counts connections. An app container and a Dockerfile build's RUN step (BuildKit, on
 * the engine's default bridge) both try them, and a listener of the host on 0.0.0.0 through their
 * bridge's gateway: the counters stay at zero, while the npm registry is still reached.
 * Needs root (namespaces, nftables), a Docker Engine and the base image; skips naming what is missing.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { createUser } from '../support/factories.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { instanceKeyOf } from '../../src/runtime/drivers.js';
import { BASE_IMAGE, dockerSuite } from '../support/docker.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

const suite = await dockerSuite('test/deployments/docker-egress', { image: BASE_IMAGE });
const { engine } = suite;
const ipOk = spawnSync('ip', ['-V']).status === 0 && spawnSync('nft', ['-v']).status === 0;
const skip = suite.skip ?? (process.getuid?.() !== 0 ? 'not root (network namespaces, nftables)' : ipOk ? null : 'no ip or nft program');
if (skip && !suite.skip) console.log(`# test/deployments/docker-egress: skipping: ${skip}`);
const opts = { skip: skip ?? false };

const tag = randomBytes(3).toString('hex');
const NS = `berth-egress-${tag}`;
const HOST_VETH = `vbe${tag}`;
const NS_VETH = `vbn${tag}`;
const octet = 100 + (parseInt(tag.slice(0, 2), 16) % 100);
const PRIVATE = `10.200.${octet}.1`;
const HOST_SIDE = `10.200.${octet}.2`;
const METADATA = '169.254.169.254';
const PORT = 18000 + (parseInt(tag.slice(2, 4), 16) % 1000);

/** The probe both the app and the RUN step run: `probe <target> reachable|unreachable` per target. */
const PROBE = `const net = require('node:net');
const probe = (host, port) => new Promise((done) => {
  const s = net.connect({ host, port: Number(port) });
  const end = (what) => { s.destroy(); done(what); };
  s.once('connect', () => end('reachable'));
  s.once('error', () => end('unreachable'));
  s.setTimeout(3000, () => end('unreachable'));
});
module.exports = probe;
if (require.main === module) (async () => {
  for (const t of process.argv[2].split(',')) { const i = t.lastIndexOf(':'); console.log('probe ' + t + ' ' + (await probe(t.slice(0, i), t.slice(i + 1)))); }
})();
`;
const SERVER = `const probe = require('./probe.js');
require('node:http').createServer(async (req, res) => {
  const [, host, port] = req.url.split('/');
  res.end(host ? await probe(host, port) : 'egress app');
}).listen(Number(process.env.PORT));
`;
const DOCKERFILE = `FROM ${BASE_IMAGE}
ARG TARGETS
COPY . /srv
WORKDIR /srv
RUN node probe.js "$TARGETS"
CMD ["node", "server.js"]
`;

let root: string;
let dataDir: string;
let pg: { url: string; drop(): Promise<void> } | undefined;
let server: TestServer;
let api: HttpClient;
let projectId: string;
let slug: string;
let listener: ChildProcess | null = null;
let nsConnections = 0;
let hostServer: net.Server;
let hostConnections = 0;
let hostPort = 0;

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `ip ${args.join(' ')}: ${r.stderr}`);
}

before(async () => {
  if (skip) return;
  // The namespace: link-local and private addresses behind a veth pair, routed through the host.
  ip('netns', 'add', NS);
  ip('link', 'add', HOST_VETH, 'type', 'veth', 'peer', 'name', NS_VETH);
  ip('link', 'set', NS_VETH, 'netns', NS);
  ip('addr', 'add', `${HOST_SIDE}/24`, 'dev', HOST_VETH);
  ip('link', 'set', HOST_VETH, 'up');
  ip('route', 'add', `${METADATA}/32`, 'dev', HOST_VETH);
  ip('-n', NS, 'addr', 'add', `${PRIVATE}/24`, 'dev', NS_VETH);
  ip('-n', NS, 'addr', 'add', `${METADATA}/32`, 'dev', NS_VETH);
  ip('-n', NS, 'link', 'set', NS_VETH, 'up');
  ip('-n', NS, 'link', 'set', 'lo', 'up');
  ip('-n', NS, 'route', 'add', 'default', 'via', HOST_SIDE);
  listener = spawn('ip', ['netns', 'exec', NS, process.execPath, '-e', `require('node:net').createServer((s) => { console.log('connection'); s.end(); }).listen(${PORT}, '0.0.0.0', () => console.log('listening'));`], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  listener.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
    nsConnections = (out.match(/^connection$/gm) ?? []).length;
  });
  await waitFor(async () => out.includes('listening') || null, 'the namespace listener');
  // The setup works: the host itself reaches both addresses (then the count starts from there).
  for (const host of [PRIVATE, METADATA]) {
    await new Promise<void>((resolve, reject) => net.connect({ host, port: PORT }).once('connect', function (this: net.Socket) { this.destroy(); resolve(); }).once('error', reject));
  }
  await waitFor(async () => nsConnections === 2 || null, 'the host reaching the namespace');
  nsConnections = 0;
  out = '';

  hostServer = net.createServer((s) => {
    hostConnections++;
    s.destroy();
  });
  await new Promise<void>((r) => hostServer.listen(0, '0.0.0.0', r));
  hostPort = (hostServer.address() as net.AddressInfo).port;

  root = tempDir('berth-docker-egress-');
  dataDir = path.join(root, 'data');
  if (usingPostgres()) pg = await freshPostgresDatabase();
  const dir = path.join(root, 'local', 'egress-app');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'probe.js'), PROBE);
  writeFileSync(path.join(dir, 'server.js'), SERVER);
  writeFileSync(path.join(dir, 'Dockerfile'), DOCKERFILE);
  server = await startTestServer({
    background: true,
    dataDir,
    databaseUrl: pg?.url,
    env: { BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_RUNTIME: 'docker', BERTH_IMAGE_NODE: BASE_IMAGE },
  });
  await getRuntime(server.ctx).restored;
  api = server.api((await createUser(server)).token);
  const created = await api.post('/api/projects', { name: 'Egress App' });
  assert.equal(created.status, 201, created.text);
  projectId = created.body.data.id;
  slug = created.body.data.slug;
  await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: dir }).where('id', '=', projectId).execute();
});

after(async () => {
  if (skip) return;
  listener?.kill('SIGKILL');
  spawnSync('ip', ['link', 'del', HOST_VETH]);
  spawnSync('ip', ['netns', 'del', NS]);
  spawnSync('ip', ['route', 'del', `${METADATA}/32`, 'dev', HOST_VETH]);
  await new Promise((r) => hostServer?.close(r));
  await server?.close();
  const key = instanceKeyOf(dataDir);
  for (const c of await engine.api.listContainers({ all: true, filters: { label: [`berth.instance=${key}`] } })) await engine.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
  for (const n of await engine.api.listNetworks({ filters: { label: [`berth.instance=${key}`] } })) await engine.api.getNetwork(n.Id).remove().catch(() => {});
  for (const i of await engine.api.listImages({ filters: { label: [`berth.project=${projectId}`] } })) await engine.api.getImage(i.Id).remove({ force: true }).catch(() => {});
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

/** The engine's default bridge's gateway (BuildKit's RUN steps are behind it). */
async function defaultGateway(): Promise<string> {
  const n = (await engine.api.getNetwork('bridge').inspect()) as { IPAM?: { Config?: { Gateway?: string }[] } };
  return n.IPAM?.Config?.[0]?.Gateway ?? '172.17.0.1';
}

test('a Dockerfile RUN step reaches the npm registry, but neither link-local, private nor host addresses', opts, async () => {
  const gateway = await defaultGateway();
  const targets = [`${METADATA}:${PORT}`, `${PRIVATE}:${PORT}`, `${gateway}:${hostPort}`, 'registry.npmjs.org:443'];
  const env = await api.patch(`/api/projects/${projectId}/env`, { environment: 'production', upserts: [{ key: 'TARGETS', value: targets.join(','), isSecret: false }], deletes: [] });
  assert.equal(env.status, 200, env.text);
  const res = await api.post('/api/deployments', { projectId });
  assert.equal(res.status, 202, res.text);
  const done = await waitForDeployment(api, res.body.data.id, 180000);
  const log = ((await api.get(`/api/deployments/${done.id}/logs`)).body.data ?? []).map((l: any) => l.line).join('\n');
  assert.equal(done.status, 'ready', `${done.error}\n${log.slice(-3000)}`);
  for (const t of targets.slice(0, 3)) assert.match(log, new RegExp(`probe ${t.replace(/\./g, '\\.')} unreachable`), log.slice(-3000));
  assert.match(log, /probe registry\.npmjs\.org:443 reachable/);
  assert.equal(nsConnections, 0, 'no connection reached the namespace');
  assert.equal(hostConnections, 0, 'no connection reached the host');
});

test('an app container reaches the npm registry, but neither link-local, private nor host addresses', opts, async () => {
  const [c] = await engine.api.listContainers({ filters: { label: [`berth.project=${projectId}`, 'berth.kind=app'] } });
  assert.ok(c, 'the app runs (the build test deployed it)');
  const gateway = Object.values((await engine.api.getContainer(c.Id).inspect()).NetworkSettings.Networks)[0]!.Gateway;
  const edge = (p: string) => edgeRequest(getRuntime(server.ctx).edgePort(), `${slug}.localhost`, p).then((r) => r.text);
  assert.equal(await edge(`/registry.npmjs.org/443`), 'reachable');
  for (const [host, port] of [[METADATA, PORT], [PRIVATE, PORT], [gateway, hostPort], [HOST_SIDE, hostPort]] as const) {
    assert.equal(await edge(`/${host}/${port}`), 'unreachable', `${host}:${port}`);
  }
  assert.equal(nsConnections, 0, 'no connection reached the namespace');
  assert.equal(hostConnections, 0, 'no connection reached the host');
});
