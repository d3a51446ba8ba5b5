/**
 * The docker runtime end to end (issue 19, contract section 13), on the real Docker Engine: a
 * Dockerfile app and a plan-built Node app deploy, answer through the edge, keep their data across a
 * redeploy, cannot reach each other, run without root or capabilities, and a server restart adopts
 * their containers instead of starting second copies. Skips with the reason when no engine answers
 * or the base image is missing (CI builds it: scripts/docker-base-images.sh).
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '20';
process.env.BERTH_SLEEP_IDLE_SECONDS = '1';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { createUser, type TestUser } from '../support/factories.js';
import { type HttpClient, edgeRequest } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { BASE_IMAGE, dockerSuite } from '../support/docker.js';
import { instanceKeyOf } from '../../src/runtime/drivers.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { waitFor, waitForDeployment } from '../support/wait.js';

const BASE = BASE_IMAGE;
const SECRET = 'sk-docker-' + randomBytes(12).toString('hex');
const { engine, skip, withEngine: opts } = await dockerSuite('test/deployments/docker', { image: BASE_IMAGE });

/** The Dockerfile app: its own server, answering what the tests probe from inside its container. */
const SERVER = `
const http = require('node:http');
const net = require('node:net');
const fs = require('node:fs');
const path = require('node:path');
http.createServer((req, res) => {
  const parts = req.url.split('/').filter(Boolean);
  if (parts[0] === 'count') {
    const f = path.join(process.env.DATA_DIR, 'count');
    const n = (fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) : 0) + 1;
    fs.writeFileSync(f, String(n));
    return res.end(String(n));
  }
  if (parts[0] === 'status') {
    const s = fs.readFileSync('/proc/self/status', 'utf8');
    const pick = (k) => (new RegExp('^' + k + ':\\\\s*(\\\\S+)', 'm').exec(s) || [])[1];
    return res.end(JSON.stringify({ uid: process.getuid(), capEff: pick('CapEff'), noNewPrivs: pick('NoNewPrivs') }));
  }
  if (parts[0] === 'exists') return res.end(String(fs.existsSync('/' + parts.slice(1).join('/'))));
  if (parts[0] === 'probe') {
    const sock = net.connect({ host: parts[1], port: Number(parts[2]) });
    const done = (what) => { sock.destroy(); if (!res.headersSent) res.end(what); };
    sock.once('connect', () => done('reachable'));
    sock.once('error', () => done('unreachable'));
    sock.setTimeout(1500, () => done('unreachable'));
    return;
  }
  res.end('docker app ' + (process.env.GREETING || '') + ' on ' + process.env.PORT);
}).listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
process.on('SIGTERM', () => process.exit(0));
`;

// BuildKit's cache key leaves secret values out: the run marker makes this step run (and print) every time.
const DOCKERFILE = `FROM ${BASE}
RUN --mount=type=secret,id=API_KEY,uid=1000 sh -c 'echo "the secret is $(cat /run/secrets/API_KEY) (run ${randomBytes(4).toString('hex')})"'
COPY . /srv
WORKDIR /srv
CMD ["node", "server.js"]
`;

let root: string;
let dataDir: string;
let pg: { url: string; drop(): Promise<void> } | undefined;
let secretKey: string;
let server: TestServer;
let owner: TestUser;
let api: HttpClient;
type Project = { id: string; slug: string };
/** Every project this file creates (after() removes their images). */
const created: Project[] = [];
/** The folders of the apps, in the local root (several projects may build the same folder). */
const dirs = { docker: '', plan: '', native: '', python: '' };
/**
 * A Dockerfile app and a plan-built app, deployed once in before(): the cases that only read a deployed
 * app share them; a case that changes an app (redeploy, restart, sleep, delete) deploys a project of its own.
 */
const shared = {} as { docker: Project; dockerDeployment: any; plan: Project; planDeployment: any };
/** The host-built Python base image (scripts/docker-base-images.sh python), when this machine has it. */
const PYTHON_IMAGE = 'berth-base/python:3.11';
const hasPython = !skip && (await engine.api.getImage(PYTHON_IMAGE).inspect().then(() => true, () => false));
/** A real native npm package whose binding links librt.so.1, libgcc_s and libdl (readelf -d): it loads only where those are. */
const NATIVE_PACKAGE = '@rollup/rollup-linux-x64-gnu';

async function boot(): Promise<TestServer> {
  const s = await startTestServer({
    background: true,
    dataDir,
    databaseUrl: pg?.url,
    env: { BERTH_SECRET_KEY: secretKey, BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_RUNTIME: 'docker', BERTH_IMAGE_NODE: BASE, BERTH_IMAGE_PYTHON: PYTHON_IMAGE, BERTH_RELEASES_KEPT: '1' },
  });
  await getRuntime(s.ctx).restored;
  return s;
}

const edge = (p: Project, pathName = '/') => edgeRequest(getRuntime(server.ctx).edgePort(), `${p.slug}.localhost`, pathName);

async function deploy(p: Project): Promise<any> {
  const res = await api.post('/api/deployments', { projectId: p.id });
  assert.equal(res.status, 202, res.text);
  const done = await waitForDeployment(api, res.body.data.id, 180000);
  assert.equal(done.status, 'ready', `${done.error}\n${(await buildLog(done.id)).slice(-3000)}`);
  return done;
}

async function buildLog(id: string): Promise<string> {
  const r = await api.get(`/api/deployments/${id}/logs`);
  return (r.body.data ?? []).map((l: any) => l.line).join('\n');
}

/** A project built from `dir` of the local root (its folder is set directly: the folder, not its scan, is the point here). */
async function createProject(dir: string, body: Record<string, string>): Promise<Project> {
  const res = await api.post('/api/projects', body);
  assert.equal(res.status, 201, res.text);
  const p = { id: res.body.data.id, slug: res.body.data.slug };
  created.push(p);
  await server.ctx.db.updateTable('projects').set({ sourceType: 'local', localPath: dir }).where('id', '=', p.id).execute();
  return p;
}

/** A project of the Dockerfile app, with its variables (GREETING, the API_KEY secret). Its build reuses the cached layers of the others'. */
async function dockerProject(name: string): Promise<Project> {
  const p = await createProject(dirs.docker, { name });
  const env = await api.patch(`/api/projects/${p.id}/env`, {
    environment: 'production',
    upserts: [
      { key: 'GREETING', value: 'hi', isSecret: false },
      { key: 'API_KEY', value: SECRET, isSecret: true },
    ],
    deletes: [],
  });
  assert.equal(env.status, 200, env.text);
  return p;
}

const planProject = (name: string) => createProject(dirs.plan, { name, buildCommand: 'node build.js', startCommand: 'npm start' });

function appContainers(projectId: string) {
  return engine.api.listContainers({ all: true, filters: { label: [`berth.project=${projectId}`, 'berth.kind=app'] } });
}

before(async () => {
  if (skip) return;
  root = tempDir('berth-docker-');
  dataDir = path.join(root, 'data');
  mkdirSync(dataDir, { recursive: true });
  secretKey = randomBytes(32).toString('base64');
  if (usingPostgres()) pg = await freshPostgresDatabase();
  const dockerDir = path.join(root, 'local', 'dockerfile-app');
  mkdirSync(dockerDir, { recursive: true });
  writeFileSync(path.join(dockerDir, 'server.js'), SERVER);
  writeFileSync(path.join(dockerDir, 'Dockerfile'), DOCKERFILE);
  writeFileSync(path.join(dockerDir, 'notes.local'), 'not for the image\n');
  writeFileSync(path.join(dockerDir, '.dockerignore'), 'notes.local\n');
  const planDir = writeTinyApp(path.join(root, 'local', 'plan-app'), { version: 'v1' });
  writeFileSync(path.join(planDir, 'build.js'), "require('fs').writeFileSync('built.txt', 'ok');\n");
  const nativeDir = path.join(root, 'local', 'native-app');
  mkdirSync(nativeDir, { recursive: true });
  writeFileSync(path.join(nativeDir, 'package.json'), JSON.stringify({ name: 'native-app', version: '1.0.0', private: true, scripts: { start: 'node server.js' }, dependencies: { [NATIVE_PACKAGE]: '4.68.8' } }));
  writeFileSync(
    path.join(nativeDir, 'server.js'),
    `const { xxhashBase16 } = require('${NATIVE_PACKAGE}');\nrequire('node:http').createServer((q, r) => r.end('native ' + xxhashBase16(new Uint8Array([1, 2, 3])))).listen(Number(process.env.PORT));\n`,
  );
  const pythonDir = path.join(root, 'local', 'python-app');
  mkdirSync(pythonDir, { recursive: true });
  writeFileSync(
    path.join(pythonDir, 'main.py'),
    "import os, sys\nfrom http.server import BaseHTTPRequestHandler, HTTPServer\nclass H(BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200); self.end_headers(); self.wfile.write(('python %d.%d' % sys.version_info[:2]).encode())\nHTTPServer(('0.0.0.0', int(os.environ['PORT'])), H).serve_forever()\n",
  );

  dirs.docker = dockerDir;
  dirs.plan = planDir;
  dirs.native = nativeDir;
  dirs.python = pythonDir;

  server = await boot();
  owner = await createUser(server);
  api = server.api(owner.token);
  // The first build of the Dockerfile in this run: its secret step runs (later builds reuse its layer).
  shared.docker = await dockerProject('Docker App');
  shared.dockerDeployment = await deploy(shared.docker);
  shared.plan = await planProject('Plan App');
  shared.planDeployment = await deploy(shared.plan);
});

after(async () => {
  if (skip) return;
  await server?.close();
  // The containers outlive a server that stops (the next start adopts them): remove them, their networks and images.
  const key = instanceKeyOf(dataDir);
  for (const c of await engine.api.listContainers({ all: true, filters: { label: [`berth.instance=${key}`] } })) await engine.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
  for (const n of await engine.api.listNetworks({ filters: { label: [`berth.instance=${key}`] } })) await engine.api.getNetwork(n.Id).remove().catch(() => {});
  for (const p of created) {
    for (const i of await engine.api.listImages({ filters: { label: [`berth.project=${p.id}`] } })) await engine.api.getImage(i.Id).remove({ force: true }).catch(() => {});
  }
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

test('a Dockerfile app builds with its secret as a BuildKit secret (never in the log or the image) and answers through the edge', opts, async () => {
  const { docker, dockerDeployment: d } = shared;
  const res = await edge(docker);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.text, 'docker app hi on 3000');
  const log = await buildLog(d.id);
  assert.match(log, /the secret is \*+/);
  assert.ok(!log.includes(SECRET), 'the build log holds the secret');
  const tag = `berth/${docker.slug}:${d.id}`;
  const history = await engine.api.getImage(tag).history();
  assert.ok(!JSON.stringify(history).includes(SECRET), 'the image history holds the secret');
  assert.ok(!JSON.stringify(await engine.api.getImage(tag).inspect()).includes(SECRET), 'the image config holds the secret');
  // .dockerignore is honoured: the ignored file is not in the image.
  assert.equal((await edge(docker, '/exists/srv/notes.local')).text, 'false');
  assert.equal((await edge(docker, '/exists/srv/server.js')).text, 'true');
});

test('the container runs as the project\'s own user, without capabilities, with no-new-privileges and the project\'s limits', opts, async () => {
  const status = JSON.parse((await edge(shared.docker, '/status')).text);
  assert.notEqual(status.uid, 0);
  assert.equal(status.capEff, '0000000000000000');
  assert.equal(status.noNewPrivs, '1');
  const [c] = await appContainers(shared.docker.id);
  assert.ok(c, 'no app container');
  const info = await engine.api.getContainer(c.Id).inspect();
  assert.equal(info.HostConfig.Memory, 512 * 1024 * 1024);
  assert.equal(info.HostConfig.NanoCpus, 1e9);
  assert.ok((info.HostConfig.PidsLimit ?? 0) > 0);
  assert.deepEqual(info.HostConfig.CapDrop, ['ALL']);
  assert.ok(info.HostConfig.SecurityOpt?.includes('no-new-privileges'));
  // Nothing of the data dir but the project's own volume is mounted.
  for (const m of info.Mounts) assert.ok(m.Destination === '/data' || !String(m.Source).startsWith(dataDir), `mounted ${m.Source}`);
});

test('a plan-built Node app runs from an image Berth packed on the base image', opts, async () => {
  const { plan, planDeployment: d } = shared;
  const res = await edge(plan);
  assert.equal(res.status, 200, res.text);
  assert.match(res.text, /^hello v1/);
  const image = await engine.api.getImage(`berth/${plan.slug}:${d.id}`).inspect();
  assert.equal(image.Config.Labels?.['berth.deployment'], d.id);
  assert.match(await buildLog(d.id), /build image: berth-base\/node:20/);
});

test('a plan whose install pulls a real native npm package (it loads librt, libgcc_s) builds and runs on the base image', opts, async () => {
  const native = await createProject(dirs.native, { name: 'Native App', installCommand: 'npm install --no-audit --no-fund' });
  const d = await deploy(native);
  const res = await edge(native);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.text, 'native 3b73ae32769bceebd4b8c4cb88eb77ac');
  assert.match(await buildLog(d.id), /install: npm install/);
});

test('a plain Python app deploys offline on the host-built Python base image', { skip: skip ?? (hasPython ? false : `no ${PYTHON_IMAGE}: scripts/docker-base-images.sh python builds it`) }, async () => {
  const python = await createProject(dirs.python, { name: 'Python App' });
  const d = await deploy(python);
  const res = await edge(python);
  assert.equal(res.status, 200, res.text);
  assert.match(res.text, /^python 3\.\d+$/);
  assert.match(await buildLog(d.id), new RegExp(`build image: ${PYTHON_IMAGE.replace(/[./]/g, '\\$&')}`));
});

test('data in /data survives a redeploy; the replaced release\'s image is pruned', opts, async () => {
  // A project of its own: this case redeploys it.
  const docker = await dockerProject('Docker Redeploy');
  await deploy(docker);
  const before = await api.get(`/api/projects/${docker.id}/deployments`);
  const first = before.body.data[0].id;
  assert.equal((await edge(docker, '/count')).text, '1');
  assert.equal((await edge(docker, '/count')).text, '2');
  const d = await deploy(docker);
  assert.notEqual(d.id, first);
  assert.equal((await edge(docker, '/count')).text, '3');
  // BERTH_RELEASES_KEPT=1: the first release's image went with its folder (the prune runs just after the deployment is ready).
  const firstImage = engine.api.getImage(`berth/${docker.slug}:${first}`);
  await waitFor(() => firstImage.inspect().then(() => null, () => true), "the first release's image to be pruned", 15000, 200);
  await assert.rejects(firstImage.inspect());
  assert.equal((await appContainers(docker.id)).filter((c) => c.State === 'running').length, 1);
});

test('one project\'s container cannot reach another\'s; the edge reaches both', opts, async () => {
  const rt = getRuntime(server.ctx);
  const plan = rt.supervisor.upstreamNow(shared.plan.id);
  assert.ok(plan, 'the plan app is not running');
  assert.equal((await edge(shared.docker, `/probe/${plan.host}/${plan.port}`)).text, 'unreachable');
  assert.equal((await edge(shared.plan)).status, 200);
  const self = rt.supervisor.upstreamNow(shared.docker.id)!;
  assert.equal((await edge(shared.docker, `/probe/${self.host}/${self.port}`)).text, 'reachable');
});

test('a server restart adopts the running containers instead of starting second copies', opts, async () => {
  // A project of its own, deployed before the restart; the shared plan app must be adopted too.
  const docker = await dockerProject('Docker Restart');
  await deploy(docker);
  assert.equal((await edge(docker, '/count')).text, '1');
  const ids = async () => (await appContainers(docker.id)).filter((c) => c.State === 'running').map((c) => c.Id).sort();
  const running = await ids();
  assert.equal(running.length, 1);
  await server.close();
  // The app keeps running while the server is down.
  assert.deepEqual(await ids(), running);
  server = await boot();
  api = server.api(owner.token);
  assert.equal((await edge(docker, '/count')).text, '2');
  assert.deepEqual(await ids(), running);
  assert.equal((await edge(shared.plan)).status, 200);
});

test('an idle auto_sleep app\'s container is stopped; the next request starts one from the cached image', opts, async () => {
  // A project of its own: this case puts it to sleep.
  const docker = await dockerProject('Docker Sleep');
  await deploy(docker);
  const { id } = docker;
  assert.equal((await edge(docker, '/count')).text, '1');
  const info = async () => (await api.get(`/api/projects/${id}/info`)).body.data.runtime;
  assert.equal((await info()).isolation, 'docker');
  assert.equal((await api.post(`/api/projects/${id}/sleep-mode`, { sleepMode: 'auto_sleep' })).status, 200);
  await waitFor(async () => ((await info()).state === 'sleeping' ? true : null), 'the app to sleep', 15000, 200);
  // The state is sleeping from the moment the stop begins; the container goes within the stop grace.
  await waitFor(async () => ((await appContainers(id)).filter((c) => c.State === 'running').length === 0 ? true : null), 'the container to stop', 10000, 200);
  const res = await edge(docker, '/count');
  assert.equal(res.status, 200);
  assert.equal(res.text, '2');
  assert.equal((await info()).state, 'running');
  assert.equal((await api.post(`/api/projects/${id}/sleep-mode`, { sleepMode: 'always_on' })).status, 200);
});

test('deleting a project removes its containers, network and images', opts, async () => {
  // A project of its own (the Dockerfile app: its layers are cached): this case deletes it.
  const docker = await dockerProject('Docker Removal');
  await deploy(docker);
  const { id } = docker;
  assert.ok((await appContainers(id)).length >= 1);
  const del = await api.delete(`/api/projects/${id}`);
  assert.ok(del.status === 200 || del.status === 204, del.text);
  const key = instanceKeyOf(dataDir);
  await waitFor(async () => ((await appContainers(id)).length === 0 ? true : null), 'the containers to go', 15000);
  assert.deepEqual(await engine.api.listImages({ filters: { label: [`berth.project=${id}`] } }), []);
  assert.deepEqual((await engine.api.listNetworks({ filters: { label: [`berth.instance=${key}`, `berth.project=${id}`] } })).map((n) => n.Name), []);
});
