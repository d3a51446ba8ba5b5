/**
 * Preview environments (contract section 16, issue 22 points 1 and 3), against a real server with the
 * real runtime and the edge (start shared through test/support/preview-server.ts): a preview is served
 * at `<branch-slug>--<project-slug>.<apps domain>` as an app of its own (its own variables, copied from
 * production when it is made; its own volume, never production's; asleep until its first request), and
 * its removal takes its app, releases and host with it. A static-site preview is served with no process.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { environmentUrl } from '../../src/modules/deployments/index.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { appKeyOf } from '../../src/runtime/app-key.js';
import { projectEnv } from '../../src/modules/projects/index.js';
import { assertError } from '../support/http.js';
import { usePreviewServer } from '../support/preview-server.js';
import { waitFor } from '../support/wait.js';

const ps = usePreviewServer();
const { edgePort, edge, upload, uploadApp, deploy, buildLog, envVars } = ps;

describe('a preview environment next to production', () => {
  /** A project with GREETING and a secret API_TOKEN in production, and production deployed (`prod-v1`). */
  async function deployedProject(name: string): Promise<{ project: { id: string; slug: string; orgId: string }; prod: any }> {
    const p = await ps.api.post('/api/projects', { name });
    assert.equal(p.status, 201, p.text);
    const project = p.body.data;
    const vars = await ps.api.patch(`/api/projects/${project.id}/env`, {
      upserts: [
        { key: 'GREETING', value: 'from-production' },
        { key: 'API_TOKEN', value: 'prod-secret-4411', isSecret: true },
      ],
    });
    assert.equal(vars.status, 200, vars.text);
    const prod = await deploy(project.id, 'production', await uploadApp('prod-v1'));
    assert.equal(prod.status, 'ready', prod.error);
    return { project, prod };
  }

  /** A preview environment `name` of the project whose GREETING is `from-preview`, deployed (`preview-v2`), not yet requested. */
  async function deployedPreview(projectId: string, name: string, branch: string): Promise<{ preview: any; done: any; host: string }> {
    const res = await ps.api.post(`/api/projects/${projectId}/environments`, { name, branch });
    assert.equal(res.status, 201, res.text);
    const edit = await ps.api.patch(`/api/projects/${projectId}/env`, { environment: name, upserts: [{ key: 'GREETING', value: 'from-preview' }] });
    assert.equal(edit.status, 200, edit.text);
    const done = await deploy(projectId, name, await uploadApp('preview-v2'));
    assert.equal(done.status, 'ready', done.error);
    return { preview: res.body.data, done, host: res.body.data.domain };
  }

  // Shared by the cases that only read it: production deployed, and the preview `feat` deployed.
  let project: { id: string; slug: string; orgId: string };
  let previewHost: string;
  const app = () => appKeyOf(project.id, 'feat');
  const prodHost = () => `${project.slug}.localhost`;

  before(async () => {
    ({ project } = await deployedProject('Preview Shop'));
    ({ host: previewHost } = await deployedPreview(project.id, 'feat', 'Feature/Login_Page'));
  });

  test('a preview environment gets its own host, `<branch-slug>--<project-slug>.<apps domain>`, named on it and on the project', async () => {
    const p = await ps.api.post('/api/projects', { name: 'Preview Hosts' });
    assert.equal(p.status, 201, p.text);
    const project = p.body.data;
    const res = await ps.api.post(`/api/projects/${project.id}/environments`, { name: 'feat', branch: 'Feature/Login_Page' });
    assert.equal(res.status, 201, res.text);
    const preview = res.body.data;
    const previewHost = `feature-login-page--${project.slug}.localhost`;
    assert.equal(preview.type, 'preview');
    assert.equal(preview.domain, previewHost);
    assert.equal(preview.url, `http://${previewHost}:${edgePort()}`);
    assert.equal(environmentUrl(ps.server.ctx, project, preview), preview.url);
    const list = await ps.api.get(`/api/projects/${project.id}/environments`);
    const production = list.body.data.find((e: any) => e.name === 'production');
    assert.equal(production.domain, null);
    assert.equal(production.url, `http://${project.slug}.localhost:${edgePort()}`);
    assert.deepEqual((await ps.api.get(`/api/projects/${project.id}`)).body.data.routes.previewDomains, [previewHost]);
  });

  test("production's variables are copied on creation, secrets too, and are then edited independently", async () => {
    const p = await ps.api.post('/api/projects', { name: 'Preview Variables' });
    assert.equal(p.status, 201, p.text);
    const project = p.body.data;
    const vars = await ps.api.patch(`/api/projects/${project.id}/env`, {
      upserts: [
        { key: 'GREETING', value: 'from-production' },
        { key: 'API_TOKEN', value: 'prod-secret-4411', isSecret: true },
      ],
    });
    assert.equal(vars.status, 200, vars.text);
    assert.equal((await ps.api.post(`/api/projects/${project.id}/environments`, { name: 'feat', branch: 'feat' })).status, 201);
    const copied = await envVars(project.id, 'feat');
    assert.deepEqual(copied, { API_TOKEN: { value: '********', isSecret: true }, GREETING: { value: 'from-production', isSecret: false } });
    // The secret is sealed again for the preview (its AAD names the environment) and decrypts to the same value.
    assert.equal((await projectEnv.resolveEnvForRuntime(ps.server.ctx, project.id, 'feat')).env.API_TOKEN, 'prod-secret-4411');
    const edit = await ps.api.patch(`/api/projects/${project.id}/env`, { environment: 'feat', upserts: [{ key: 'GREETING', value: 'from-preview' }] });
    assert.equal(edit.status, 200, edit.text);
    assert.equal((await envVars(project.id, 'production')).GREETING!.value, 'from-production');
    await ps.api.patch(`/api/projects/${project.id}/env`, { upserts: [{ key: 'ONLY_PROD', value: '1' }] });
    assert.equal((await envVars(project.id, 'feat')).ONLY_PROD, undefined);
  });

  test('a preview built from an uploaded folder is not started when it becomes ready; its first request through the edge starts it, and it answers with its own release and variables while production answers its own', async () => {
    // A project and preview of its own: no other case has sent this preview a request.
    const { project: own, prod } = await deployedProject('Preview First Request');
    const { preview, done, host } = await deployedPreview(own.id, 'feat', 'first-request');
    const app = appKeyOf(own.id, 'feat');
    const prodHost = `${own.slug}.localhost`;
    assert.equal(done.status, 'ready', done.error);
    assert.equal(done.environment, 'feat');
    assert.equal(done.current, true);
    assert.ok((await buildLog(done.id)).some((l) => l.includes(`feat is served at ${preview.url}; its app starts on its first request`)));
    const rt = getRuntime(ps.server.ctx);
    assert.ok(!['running', 'starting'].includes(rt.supervisor.stateOf(app) ?? 'none'), 'the preview app is not started by its deployment');
    assert.equal(rt.supervisor.snapshot(app)?.pid, undefined);

    const first = await edge(host);
    assert.equal(first.status, 200, first.text);
    assert.match(first.text, /^hello preview-v2/);
    assert.equal(rt.supervisor.stateOf(app), 'running', 'the first request started it');
    assert.equal((await edge(host, '/env/GREETING')).text, 'from-preview');
    assert.equal((await edge(host, '/env/API_TOKEN')).text, 'prod-secret-4411');
    assert.match((await edge(prodHost)).text, /^hello prod-v1/);
    assert.equal((await edge(prodHost, '/env/GREETING')).text, 'from-production');
    // Two apps: production's process is not the preview's.
    assert.notEqual(rt.supervisor.snapshot(app)!.pid, rt.supervisor.snapshot(own.id)!.pid);
    assert.equal(rt.supervisor.snapshot(own.id)!.deploymentId, prod.id);
  });

  test("the preview does not see production's /data volume: it gets an empty one of its own", async () => {
    const prodVolume = path.join(ps.server.dataDir, 'volumes', project.id, 'data');
    const previewVolume = path.join(ps.server.dataDir, 'volumes', project.id, '.previews', 'feat');
    mkdirSync(prodVolume, { recursive: true });
    writeFileSync(path.join(prodVolume, 'production-only.txt'), 'secret data');
    rmSync(path.join(prodVolume, 'touched'), { force: true });
    const res = await edge(previewHost, '/data');
    assert.equal(res.status, 200, res.text);
    assert.equal(existsSync(path.join(prodVolume, 'touched')), false, "the preview wrote nothing into production's volume");
    assert.equal(readFileSync(path.join(previewVolume, 'touched'), 'utf8'), 'yes', 'it wrote into its own');
    assert.equal(existsSync(path.join(previewVolume, 'production-only.txt')), false);
  });

  test("the preview's app is as isolated as production's: its sandbox cannot reach production's app (root: a network namespace each); the edge reaches both", async (t) => {
    const rt = getRuntime(ps.server.ctx);
    if (rt.driver.isolation !== 'sandbox' || process.getuid?.() !== 0) return t.skip('needs the sandbox runtime as root (a network namespace per app)');
    assert.equal((await edge(previewHost)).status, 200);
    const prodUp = rt.supervisor.upstreamNow(project.id)!;
    const self = rt.supervisor.upstreamNow(app())!;
    assert.notEqual(prodUp.host, self.host);
    assert.equal((await edge(previewHost, `/probe/${prodUp.host}/${prodUp.port}`)).text, 'unreachable');
    assert.equal((await edge(prodHost(), `/probe/${self.host}/${self.port}`)).text, 'unreachable');
    assert.equal((await edge(prodHost())).status, 200);
  });

  test("the preview's app has its own runtime and request logs (`?environment=`); production's hold none of its lines; `environment=*` reads every environment's requests", async () => {
    const greeting = await edge(previewHost, '/env/GREETING');
    assert.equal(greeting.text, 'from-preview', `status ${greeting.status}`);
    const preview = await ps.api.get(`/api/projects/${project.id}/logs?environment=feat&limit=1000`);
    assert.equal(preview.status, 200, preview.text);
    assert.ok(preview.body.data.some((l: any) => l.line.includes('listening on') && l.line.includes('preview-v2')), preview.text);
    const production = await ps.api.get(`/api/projects/${project.id}/logs?limit=1000`);
    assert.ok(!production.body.data.some((l: any) => l.line.includes('preview-v2')), 'no preview line in production\'s log');
    assert.ok(production.body.data.some((l: any) => l.line.includes('prod-v1')));
    const requests = await ps.api.get(`/api/projects/${project.id}/server-logs/recent?environment=feat`);
    assert.equal(requests.status, 200, requests.text);
    assert.ok(requests.body.data.some((r: any) => r.path === '/env/GREETING'));
    assert.ok(!(await ps.api.get(`/api/projects/${project.id}/server-logs/recent`)).body.data.some((r: any) => r.path === '/data'), "the preview's requests are not production's");
    assert.ok(!requests.body.data.some((r: any) => 'environment' in r), 'one environment: the entries as they were');
    // Every environment at once (`*`): both apps' requests, oldest first, each naming its environment.
    const served = await edge(prodHost(), '/every-production');
    assert.equal(served.status, 200, served.text);
    const every = await ps.api.get(`/api/projects/${project.id}/server-logs/recent?environment=*&limit=1000`);
    assert.equal(every.status, 200, every.text);
    assert.ok(every.body.data.some((r: any) => r.path === '/env/GREETING' && r.environment === 'feat'), every.text);
    assert.ok(every.body.data.some((r: any) => r.path === '/every-production' && r.environment === 'production'), every.text);
    assert.ok(every.body.data.every((r: any, i: number, all: any[]) => i === 0 || all[i - 1].ts <= r.ts), 'oldest first');
    const once = every.body.data.filter((r: any) => r.path === '/every-production');
    assert.equal(once.length, 1, JSON.stringify(once));
    const newest = await ps.api.get(`/api/projects/${project.id}/server-logs/recent?environment=*&limit=1`);
    assert.equal(newest.body.data?.length, 1, newest.text);
    assertError(await ps.api.get(`/api/projects/${project.id}/logs?environment=*`), 400, 'VALIDATION_FAILED', 'environment');
    assertError(await ps.api.get(`/api/projects/${project.id}/logs?environment=nope`), 400, 'VALIDATION_FAILED', 'environment');
    // The live request stream of the preview: its requests, not production's.
    const streamed = async (query: string, served: () => Promise<unknown>, until = '/streamed-'): Promise<string> => {
      const tok = (await ps.api.get(`/api/projects/${project.id}/server-logs/stream-token`)).body.data.token;
      const ac = new AbortController();
      const res = await fetch(`${ps.server.url}/api/projects/${project.id}/server-logs/stream?token=${tok}${query}`, { signal: ac.signal });
      assert.equal(res.status, 200, `the stream ${query} answered ${res.status}`);
      const reader = res.body!.getReader();
      await served();
      let text = '';
      const deadline = Date.now() + 5000;
      while (!text.includes(until) && Date.now() < deadline) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString();
      }
      ac.abort();
      return text;
    };
    const previewStream = await streamed('&environment=feat', async () => {
      await edge(prodHost(), '/streamed-production');
      await edge(previewHost, '/streamed-preview');
    });
    assert.match(previewStream, /"path":"\/streamed-preview"/);
    assert.doesNotMatch(previewStream, /streamed-production/);
    // Every environment's: both, each naming its environment.
    const everyStream = await streamed(
      '&environment=*',
      async () => {
        await edge(prodHost(), '/streamed-every-production');
        await edge(previewHost, '/streamed-every-preview');
      },
      '/streamed-every-preview',
    );
    assert.match(everyStream, /"path":"\/streamed-every-production"[^}]*"environment":"production"/);
    assert.match(everyStream, /"path":"\/streamed-every-preview"[^}]*"environment":"feat"/);
    const tok = (await ps.api.get(`/api/projects/${project.id}/server-logs/stream-token`)).body.data.token;
    assertError(await ps.api.get(`/api/projects/${project.id}/server-logs/stream?token=${tok}&environment=nope`), 400, 'VALIDATION_FAILED', 'environment');
  });

  test('an idle preview goes back to sleep, and the next request wakes it again', async () => {
    const rt = getRuntime(ps.server.ctx);
    assert.match((await edge(previewHost)).text, /^hello preview-v2/);
    await waitFor(() => rt.supervisor.stateOf(app()) === 'sleeping', 'the preview to sleep', 20_000, 100);
    assert.equal(rt.supervisor.stateOf(project.id), 'running', 'production (always_on) stays up');
    assert.match((await edge(previewHost)).text, /^hello preview-v2/);
    assert.equal(rt.supervisor.stateOf(app()), 'running');
  });

  test('deleting the environment stops its app, removes its releases, variables and volume, and its host then answers 404; production keeps serving', async () => {
    // A project and preview of its own: this case removes the preview.
    const { project } = await deployedProject('Preview Removal');
    const { host: previewHost } = await deployedPreview(project.id, 'feat', 'Feature/Login_Page');
    const app = () => appKeyOf(project.id, 'feat');
    const prodHost = () => `${project.slug}.localhost`;
    mkdirSync(path.join(ps.server.dataDir, 'volumes', project.id, 'data'), { recursive: true });
    writeFileSync(path.join(ps.server.dataDir, 'volumes', project.id, 'data', 'production-only.txt'), 'secret data');
    const rt = getRuntime(ps.server.ctx);
    assert.match((await edge(previewHost)).text, /^hello preview-v2/);
    const pid = rt.supervisor.snapshot(app())!.pid!;
    const ids = (await ps.api.get(`/api/projects/${project.id}/deployments?environment=feat`)).body.data.map((d: any) => d.id);
    assert.ok(ids.length >= 1);
    const builds = ids.map((id: string) => path.join(ps.server.dataDir, 'builds', project.id, id));
    assert.ok(builds.every((b: string) => existsSync(b)));

    const del = await ps.api.delete(`/api/projects/${project.id}/environments/feat`);
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body.data, { name: 'feat', deleted: true });
    assert.equal(rt.supervisor.stateOf(app()), undefined, 'its app is gone');
    await waitFor(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    }, 'the preview process to exit', 10_000);
    for (const id of ids) assert.equal((await ps.api.get(`/api/deployments/${id}`)).status, 404);
    assert.ok(builds.every((b: string) => !existsSync(b)), 'its build outputs are gone');
    assert.equal(existsSync(path.join(ps.server.dataDir, 'volumes', project.id, '.previews', 'feat')), false, 'its volume is gone');
    assert.equal(existsSync(path.join(ps.server.dataDir, 'volumes', project.id, 'data', 'production-only.txt')), true, "production's volume stays");
    assertError(await ps.api.get(`/api/projects/${project.id}/env?environment=feat`), 400, 'VALIDATION_FAILED', 'environment');
    assert.deepEqual((await ps.api.get(`/api/projects/${project.id}`)).body.data.routes.previewDomains, []);
    assert.equal((await edge(previewHost)).status, 404);
    assert.match((await edge(prodHost())).text, /^hello prod-v1/);
    // Idempotent; production is not an environment to remove.
    assert.equal((await ps.api.delete(`/api/projects/${project.id}/environments/feat`)).status, 200);
    assertError(await ps.api.delete(`/api/projects/${project.id}/environments/production`), 400, 'VALIDATION_FAILED', 'env');
  });
});

test("a static-site release of a preview is served by the edge at its host, like production's, with no process", async () => {
  const site = (name: string, text: string) => {
    const dir = path.join(ps.root, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'index.html'), `<!doctype html><title>${name}</title><p>${text}</p>\n`);
    return upload(dir);
  };
  const p = await ps.api.post('/api/projects', { name: 'Static Previews' });
  assert.equal(p.status, 201, p.text);
  const project = p.body.data;
  const prod = await deploy(project.id, 'production', await site('static-prod', 'the production site'));
  assert.equal(prod.status, 'ready', prod.error);
  const env = await ps.api.post(`/api/projects/${project.id}/environments`, { name: 'docs', branch: 'docs/new-look' });
  assert.equal(env.status, 201, env.text);
  const done = await deploy(project.id, 'docs', await site('static-preview', 'the preview site'));
  assert.equal(done.status, 'ready', done.error);
  const res = await edge(env.body.data.domain);
  assert.equal(res.status, 200, res.text);
  assert.match(res.text, /the preview site/);
  assert.match((await edge(`${project.slug}.localhost`)).text, /the production site/);
  assert.equal(getRuntime(ps.server.ctx).supervisor.stateOf(appKeyOf(project.id, 'docs')), undefined, 'no process runs for it');
});
