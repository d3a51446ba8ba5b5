// @store-independent: what it checks is the docker runtime's containers and networks for previews, the same on either store (previews' records run on PostgreSQL in deployments/previews-environment and previews-promote).
/**
 * Preview environments under the docker runtime (contract sections 13 and 16), on the real Docker
 * Engine: a preview runs as a container of its own, on a network of its own (production's container
 * cannot be reached from it), with its own /data; it starts on its first request; promotion runs the
 * preview's image as production's app with production's variables; removing the preview removes its
 * container and network but not the image production now runs. Skips with the reason when no engine
 * answers or the base image is missing (scripts/docker-base-images.sh builds it).
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '20';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { createUser, type TestUser } from '../support/factories.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { appKeyOf } from '../../src/runtime/app-key.js';
import { BASE_IMAGE, dockerSuite } from '../support/docker.js';
import { instanceKeyOf } from '../../src/runtime/drivers.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { waitForDeployment } from '../support/wait.js';

const { engine, skip, withEngine: opts } = await dockerSuite('test/deployments/previews-docker', { image: BASE_IMAGE });

let root: string;
let dataDir: string;
let server: TestServer;
let owner: TestUser;
let api: HttpClient;
let project: { id: string; slug: string };
let app: string;

const edge = (host: string, pathName = '/') => edgeRequest(getRuntime(server.ctx).edgePort(), host, pathName);
const prodHost = () => `${project.slug}.localhost`;
const previewHost = () => `pr-9--${project.slug}.localhost`;

/** The app containers of the project: production's (no `berth.app`) and the preview's. */
async function containers(): Promise<{ prod: string[]; preview: string[] }> {
  const list = await engine.api.listContainers({ filters: { label: [`berth.project=${project.id}`, 'berth.kind=app'], status: ['running'] } });
  return { prod: list.filter((c) => !c.Labels['berth.app']).map((c) => c.Id), preview: list.filter((c) => c.Labels['berth.app'] === app).map((c) => c.Id) };
}

/** The tiny app of `version`, with `/probe/<host>/<port>` (whether a TCP connection from inside the container succeeds). */
function writeApp(version: string): void {
  const dir = writeTinyApp(path.join(root, 'local', 'app'), { version });
  const probe = `
const probeServer = require('node:http').createServer((req, res) => {
  const parts = req.url.split('/').filter(Boolean);
  const sock = require('node:net').connect({ host: parts[1], port: Number(parts[2]) });
  const done = (what) => { sock.destroy(); if (!res.headersSent) res.end(what); };
  sock.once('connect', () => done('reachable'));
  sock.once('error', () => done('unreachable'));
  sock.setTimeout(1500, () => done('unreachable'));
});
`;
  const file = path.join(dir, 'server.js');
  const text = readFileSync(file, 'utf8').replace("const server = http.createServer((req, res) => {", probe + "const server = http.createServer((req, res) => {\n  if (req.url.startsWith('/probe/')) return probeServer.emit('request', req, res);");
  writeFileSync(file, text);
}

async function deploy(environment: string, version: string): Promise<any> {
  writeApp(version);
  const res = await api.post('/api/deployments', { projectId: project.id, environment });
  assert.equal(res.status, 202, res.text);
  const done = await waitForDeployment(api, res.body.data.id, 180_000);
  assert.equal(done.status, 'ready', done.error);
  return done;
}

before(async () => {
  if (skip) return;
  root = tempDir('berth-previews-docker-');
  dataDir = path.join(root, 'data');
  mkdirSync(path.join(root, 'local', 'app'), { recursive: true });
  server = await startTestServer({
    background: true,
    dataDir,
    env: { BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_RUNTIME: 'docker', BERTH_IMAGE_NODE: BASE_IMAGE },
  });
  await getRuntime(server.ctx).restored;
  owner = await createUser(server);
  api = server.api(owner.token);
  writeApp('v1');
  const created = await api.post('/api/projects/import', { path: path.join(root, 'local', 'app'), name: 'Docker Previews' });
  assert.equal(created.status, 201, created.text);
  project = created.body.data;
  app = appKeyOf(project.id, 'pr-9');
  await api.patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'GREETING', value: 'prod' }] });
});

after(async () => {
  if (skip) return;
  await server?.close();
  const key = instanceKeyOf(dataDir);
  for (const c of await engine.api.listContainers({ all: true, filters: { label: [`berth.instance=${key}`] } })) await engine.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
  for (const n of await engine.api.listNetworks({ filters: { label: [`berth.instance=${key}`] } })) await engine.api.getNetwork(n.Id).remove().catch(() => {});
  for (const i of await engine.api.listImages({ filters: { label: [`berth.project=${project?.id}`] } })) await engine.api.getImage(i.Id).remove({ force: true }).catch(() => {});
  rmSync(root, { recursive: true, force: true });
});

test('a preview runs as a container of its own on a network of its own, started by its first request, with its own variables and /data', opts, async () => {
  await deploy('production', 'v1');
  const env = await api.post(`/api/projects/${project.id}/environments`, { name: 'pr-9', branch: 'pr-9' });
  assert.equal(env.status, 201, env.text);
  assert.equal(env.body.data.domain, previewHost());
  await api.patch(`/api/projects/${project.id}/env`, { environment: 'pr-9', upserts: [{ key: 'GREETING', value: 'preview' }] });
  await deploy('pr-9', 'v2');
  assert.deepEqual((await containers()).preview, [], 'no container before its first request');

  const res = await edge(previewHost());
  assert.equal(res.status, 200, res.text);
  assert.match(res.text, /^hello v2/);
  assert.equal((await edge(previewHost(), '/env/GREETING')).text, 'preview');
  assert.match((await edge(prodHost())).text, /^hello v1/);
  assert.equal((await edge(prodHost(), '/env/GREETING')).text, 'prod');
  const c = await containers();
  assert.equal(c.prod.length, 1);
  assert.equal(c.preview.length, 1);
  const info = await engine.api.getContainer(c.preview[0]!).inspect();
  const prodInfo = await engine.api.getContainer(c.prod[0]!).inspect();
  assert.deepEqual(Object.keys(info.NetworkSettings.Networks), [`berth-${instanceKeyOf(dataDir)}-${app}`]);
  assert.notDeepEqual(Object.keys(info.NetworkSettings.Networks), Object.keys(prodInfo.NetworkSettings.Networks));
  const volume = info.Mounts.find((m) => m.Destination === '/data');
  assert.equal(volume?.Source, path.join(dataDir, 'volumes', project.id, '.previews', 'pr-9'));
  assert.notEqual(volume?.Source, prodInfo.Mounts.find((m) => m.Destination === '/data')?.Source);
  assert.deepEqual(info.HostConfig.CapDrop, ['ALL']);
  assert.ok(info.HostConfig.SecurityOpt?.includes('no-new-privileges'));
  // The preview cannot reach production's container (another network); the edge reaches both.
  const rt = getRuntime(server.ctx);
  const prodUp = rt.supervisor.upstreamNow(project.id)!;
  const self = rt.supervisor.upstreamNow(app)!;
  assert.equal((await edge(previewHost(), `/probe/${prodUp.host}/${prodUp.port}`)).text, 'unreachable');
  assert.equal((await edge(previewHost(), `/probe/${self.host}/${self.port}`)).text, 'reachable');
});

test("promotion runs the preview's image as production's app with production's variables, and removing the preview keeps that image", opts, async () => {
  const preview = (await api.get(`/api/projects/${project.id}/deployments?environment=pr-9`)).body.data[0];
  const image = `berth/${project.slug}:${preview.id}`;
  const res = await api.post(`/api/projects/${project.id}/environments/pr-9/promote`);
  assert.equal(res.status, 202, res.text);
  assert.equal(res.body.data.promotedFrom, preview.id);
  assert.match((await edge(prodHost())).text, /^hello v2/);
  assert.equal((await edge(prodHost(), '/env/GREETING')).text, 'prod');
  const prod = await engine.api.getContainer((await containers()).prod[0]!).inspect();
  assert.equal(prod.Config.Image, image);

  const del = await api.delete(`/api/projects/${project.id}/environments/pr-9`);
  assert.equal(del.status, 200, del.text);
  assert.deepEqual((await containers()).preview, [], 'its container is gone');
  const nets = await engine.api.listNetworks({ filters: { name: [`berth-${instanceKeyOf(dataDir)}-${app}`] } });
  assert.equal(nets.length, 0, 'its network is gone');
  assert.equal(existsSync(path.join(dataDir, 'volumes', project.id, '.previews', 'pr-9')), false);
  await engine.api.getImage(image).inspect();
  assert.equal((await edge(previewHost())).status, 404);
  assert.match((await edge(prodHost())).text, /^hello v2/);
});
