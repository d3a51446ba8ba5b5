// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * `berth env` in a folder linked by `berth deploy` (no PROJECT needed), the note that a change
 * waits for the next deployment, and `env set --redeploy`, which deploys and follows the build like
 * `berth deploy`: against a real deployment of a tiny app (local folder source, sandbox, the edge).
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { writeLink } from '../../src/cli/link.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { createProject, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { edgeRequest } from '../support/http.js';
import { waitForDeployment } from '../support/wait.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { cliUser, lines, type CliUser } from './commands-support.js';

describe('berth env in a linked folder, and env set --redeploy', () => {
  let server: TestServer;
  let owner: TestUser;
  let project: { id: string; slug: string };
  let cli: CliUser;
  const root = tempDir('berth-cli-env-');
  const appDir = path.join(root, 'local', 'tiny');
  const linked = tempDir('berth-cli-env-linked-');
  const appEnv = (name: string) => edgeRequest(getRuntime(server.ctx).edgePort(), `${project.slug}.localhost`, `/env/${name}`);

  before(async () => {
    server = await startTestServer({ background: true, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local') } });
    await getRuntime(server.ctx).restored;
    owner = await createUser(server);
    writeTinyApp(appDir, { version: 'v1' });
    const imported = await server.api(owner.token).post('/api/projects/import', { path: appDir, name: 'tiny' });
    assert.equal(imported.status, 201, imported.text);
    project = imported.body.data;
    const res = await server.api(owner.token).post('/api/deployments', { projectId: project.id });
    assert.equal(res.status, 202, res.text);
    const done = await waitForDeployment(server.api(owner.token), res.body.data.id, 60000);
    assert.equal(done.status, 'ready', done.error);
    writeLink(linked, { projectId: project.id, orgId: owner.orgId, server: server.url });
    cli = cliUser(server, owner.token);
  });
  after(() => server?.close());

  it('`env set KEY=v` in a linked folder sets it on the linked project and says a redeploy is needed', async () => {
    const res = await cli.run(['env', 'set', 'GREETING=hello'], { cwd: linked });
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout.trim(), `set GREETING on ${project.slug} (production)`);
    assert.match(res.stderr, /the running app keeps the old values until its next deployment: pass --redeploy, or run `berth deploy`/);
    const vars = await server.api(owner.token).get(`/api/projects/${project.id}/env`);
    assert.equal(vars.body.data.find((v: any) => v.key === 'GREETING').value, 'hello');
    assert.equal((await appEnv('GREETING')).text, '', 'the running app does not have it yet');
  });

  it('`env list`, `env pull [FILE]` and `env unset KEY` in a linked folder need no PROJECT; a first argument naming a project still picks it', async () => {
    const list = await cli.run(['env', 'list', '--json'], { cwd: linked });
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual(JSON.parse(list.stdout).map((v: any) => v.key), ['GREETING']);
    const pulled = await cli.run(['env', 'pull', 'prod.env'], { cwd: linked });
    assert.equal(pulled.code, 0, pulled.stderr);
    assert.deepEqual(parseEnv(readFileSync(path.join(linked, 'prod.env'), 'utf8')), { GREETING: 'hello' });
    const other = await createProject(server, owner, { name: 'Other Thing' });
    const named = await cli.run(['env', 'set', other.slug, 'ONLY_OTHER=1'], { cwd: linked });
    assert.equal(named.code, 0, named.stderr);
    assert.match(named.stdout, new RegExp(`on ${other.slug} \\(production\\)`));
    const byOption = await cli.run(['env', 'unset', '--project', other.slug, 'ONLY_OTHER'], { cwd: linked });
    assert.equal(byOption.code, 0, byOption.stderr);
    assert.match(byOption.stdout, new RegExp(`removed ONLY_OTHER from ${other.slug}`));
    const unset = await cli.run(['env', 'unset', 'GREETING', '--json'], { cwd: linked });
    assert.equal(unset.code, 0, unset.stderr);
    assert.deepEqual(JSON.parse(unset.stdout), { project: project.id, environment: 'production', removed: ['GREETING'], deployment: null, url: null });
  });

  it('outside a linked folder `env set KEY=v` is a usage error (2) naming what to do; no pair is one too', async () => {
    const bare = await cli.run(['env', 'set', 'GREETING=x'], { cwd: tempDir() });
    assert.equal(bare.code, 2);
    assert.match(bare.stderr, /name a project \(id, slug or name\), or run this in a folder linked by `berth deploy`/);
    const noPair = await cli.run(['env', 'set', project.slug], { cwd: linked });
    assert.equal(noPair.code, 2);
    assert.match(noPair.stderr, /name at least one KEY=VALUE pair/);
  });

  it('`env set KEY=v --redeploy` deploys, streams the build log, prints the URL last, and the app then has the value', async () => {
    const res = await cli.run(['env', 'set', 'GREETING=redeployed', '--redeploy'], { cwd: linked, timeoutMs: 120000 });
    assert.equal(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stderr, /deployment dpl_\S+ queued \(production\): redeploying with the new variables/);
    assert.match(res.stdout, /\[berth\] /, 'the build log is streamed');
    const url = lines(res.stdout).pop()!;
    const info = await server.api(owner.token).get(`/api/projects/${project.id}/info`);
    assert.equal(url, info.body.data.runtime.url);
    assert.doesNotMatch(res.stderr, /keeps the old values/);
    assert.equal((await appEnv('GREETING')).text, 'redeployed');
  });

  it('`env set --redeploy --json` prints { project, environment, set, deployment, url } only, the log on stderr', async () => {
    const res = await cli.run(['env', 'set', 'GREETING=json', '--redeploy', '--json'], { cwd: linked, timeoutMs: 120000 });
    assert.equal(res.code, 0, res.stderr + res.stdout);
    const out = JSON.parse(res.stdout);
    assert.deepEqual(Object.keys(out).sort(), ['deployment', 'environment', 'project', 'set', 'url']);
    assert.deepEqual(out.set, ['GREETING']);
    assert.equal(out.deployment.status, 'ready');
    assert.match(out.url, /^https?:\/\//);
    assert.equal((await appEnv('GREETING')).text, 'json');
  });
});
