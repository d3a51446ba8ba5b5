// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * `berth deployments` marking the serving deployment, `berth rollback` and `berth promote`, against
 * real ready deployments of a tiny app (local folder source, the sandbox runtime, the edge).
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '10';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { createProject, createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitForDeployment } from '../support/wait.js';
import { writeTinyApp } from '../runtime/app-fixture.js';
import { cliUser, lines, type CliUser } from './commands-support.js';
import { edgeRequest, type EdgeAnswer } from '../support/http.js';

/** A request to the edge of `srv` for `host`. */
function edge(srv: TestServer, host: string): Promise<EdgeAnswer> {
  return edgeRequest(getRuntime(srv.ctx).edgePort(), host);
}

describe('berth deployments, rollback and promote (real deployments)', () => {
  let server: TestServer;
  let owner: TestUser;
  let project: { id: string; slug: string };
  let cli: CliUser;
  let d1: string;
  let d2: string;
  const root = tempDir('berth-cli-rollback-');
  const appDir = path.join(root, 'local', 'tiny');


  async function deployReady(environment?: string): Promise<string> {
    const res = await server.api(owner.token).post('/api/deployments', { projectId: project.id, ...(environment ? { environment } : {}) });
    assert.equal(res.status, 202, res.text);
    const done = await waitForDeployment(server.api(owner.token), res.body.data.id, 60000);
    assert.equal(done.status, 'ready', done.error);
    return done.id;
  }

  before(async () => {
    server = await startTestServer({ background: true, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local') } });
    await getRuntime(server.ctx).restored;
    owner = await createUser(server);
    writeTinyApp(appDir, { version: 'v1' });
    const imported = await server.api(owner.token).post('/api/projects/import', { path: appDir, name: 'tiny' });
    assert.equal(imported.status, 201, imported.text);
    project = imported.body.data;
    d1 = await deployReady();
    writeTinyApp(appDir, { version: 'v2' });
    d2 = await deployReady();
    assert.match((await edge(server, `${project.slug}.localhost`)).text, /^hello v2/);
    cli = cliUser(server, owner.token);
  });
  after(() => server?.close());

  it('`deployments` marks the deployment that serves with `*` (and `current: true` in --json)', async () => {
    const [table, json] = await Promise.all([cli.run(['deployments', project.slug]), cli.run(['deployments', project.slug, '--json'])]);
    assert.equal(table.code, 0, table.stderr);
    const rows = lines(table.stdout);
    assert.match(rows.find((r) => r.includes(d2))!, /^\*\s+\S+\s+ready\s+api\s+production/);
    assert.match(rows.find((r) => r.includes(d1))!, /^\s+\S+\s+ready/);
    assert.match(table.stderr, /\* serving now/);
    const list = JSON.parse(json.stdout);
    assert.deepEqual(list.map((d: any) => [d.id, d.current]), [[d2, true], [d1, false]]);
  });

  it('`rollback PROJECT` serves the ready deployment before the current one again and says so', async () => {
    const res = await cli.run(['rollback', project.slug]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(lines(res.stdout)[0]!, new RegExp(`^rolled back ${project.slug} \\(production\\): now serving ${d1} `));
    assert.match((await edge(server, `${project.slug}.localhost`)).text, /^hello v1/);
    const list = JSON.parse((await cli.run(['deployments', project.slug, '--json'])).stdout);
    assert.deepEqual(list.filter((d: any) => d.current).map((d: any) => d.id), [d1]);
  });

  it('`rollback PROJECT DEPLOYMENT --json` switches to that deployment and prints it', async () => {
    const res = await cli.run(['rollback', project.id, d2, '--json']);
    assert.equal(res.code, 0, res.stderr);
    const d = JSON.parse(res.stdout);
    assert.equal(d.id, d2);
    assert.equal(d.current, true);
    assert.match((await edge(server, `${project.slug}.localhost`)).text, /^hello v2/);
  });

  it('`rollback` refusals: an unknown deployment or another org\'s project (1); no PROJECT (2)', async () => {
    const stranger = await createUser(server);
    const theirs = await createProject(server, stranger);
    const [unknown, foreign, usage] = await Promise.all([
      cli.run(['rollback', project.slug, 'dep_doesnotexist000000']),
      cli.run(['rollback', theirs.id]),
      cli.run(['rollback']),
    ]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^error: /m);
    assert.doesNotMatch(unknown.stderr, /\n\s+at /);
    assert.equal(foreign.code, 1);
    assert.match(foreign.stderr, /no project/);
    assert.equal(usage.code, 2);
    assert.match((await edge(server, `${project.slug}.localhost`)).text, /^hello v2/);
  });

  it('`promote PROJECT ENV` puts the preview\'s ready build into production without a build, and says what serves', async () => {
    const env = await server.api(owner.token).post(`/api/projects/${project.id}/environments`, { name: 'next', branch: 'next' });
    assert.equal(env.status, 201, env.text);
    writeTinyApp(appDir, { version: 'v3' });
    const preview = await deployReady('next');
    assert.match((await edge(server, `${project.slug}.localhost`)).text, /^hello v2/, 'production is untouched by the preview');
    const res = await cli.run(['promote', project.slug, 'next']);
    assert.equal(res.code, 0, res.stderr);
    const first = lines(res.stdout)[0]!;
    assert.match(first, new RegExp(`^promoted next of ${project.slug} to production: now serving dpl_\\S+ \\(.*the build of ${preview}\\)$`));
    assert.match((await edge(server, `${project.slug}.localhost`)).text, /^hello v3/);
    const list = JSON.parse((await cli.run(['deployments', project.slug, '-e', 'production', '--json'])).stdout);
    const current = list.find((d: any) => d.current);
    assert.equal(current.trigger, 'promote');
    assert.ok(first.includes(current.id));
    // `--json` prints the new production deployment, and only it, on stdout.
    const json = await cli.run(['promote', project.slug, 'next', '--json']);
    assert.equal(json.code, 0, json.stderr);
    const promoted = JSON.parse(json.stdout);
    assert.equal(promoted.environment, 'production');
    assert.equal(promoted.trigger, 'promote');
  });

  it('`promote` refusals: production itself or an unknown environment (1, the API\'s words); no ENV (2)', async () => {
    const [self, unknown, usage] = await Promise.all([
      cli.run(['promote', project.slug, 'production']),
      cli.run(['promote', project.slug, 'nowhere', '--json']),
      cli.run(['promote', project.slug]),
    ]);
    assert.equal(self.code, 1);
    assert.match(self.stderr, /production cannot be promoted to itself/);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no environment named "nowhere"/);
    assert.doesNotMatch(unknown.stderr, /\n\s+at /);
    assert.equal(usage.code, 2);
  });
});
