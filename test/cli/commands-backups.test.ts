// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * `berth backups`: destinations (list, create, test), policies (list, create), run, list, and
 * restore (prepare, show what is replaced, confirm or --yes, apply, follow), with their exit codes.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createDestination, createPolicy, createProjectWithVolume, createUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitTerminal } from '../backups/helpers.js';
import { cliUser, lines } from './commands-support.js';

describe('berth backups', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ background: true });
  });
  after(() => server?.close());

  /**
   * Each case's own user (so its own org: names like "nightly" and "keeper" are free) with a project
   * "Keeper" whose data volume holds notes.txt "version one", and an empty destination folder.
   */
  async function owner() {
    const alice = await createUser(server);
    const project = await createProjectWithVolume(server, alice, { name: 'Keeper' });
    mkdirSync(project.volume, { recursive: true });
    writeFileSync(path.join(project.volume, 'notes.txt'), 'version one\n');
    return { alice, project, cli: cliUser(server, alice.token), destDir: tempDir('berth-dest-') };
  }
  /** owner() with the local destination "nightly" made through the service. */
  async function withDestination() {
    const o = await owner();
    return { ...o, destinationId: (await createDestination(server, o.alice, { name: 'nightly', dir: o.destDir })).id };
  }
  /** withDestination() with a policy of the data volume and one succeeded run of "version one". */
  async function withRun() {
    const o = await withDestination();
    const policyId = (await createPolicy(server, o.alice, o.project, { destinationId: o.destinationId })).id;
    const started = await server.api(o.alice.token).post(`/api/backup-policies/${policyId}/run`);
    assert.ok(started.status === 201 || started.status === 200, started.text);
    const run = await waitTerminal(server, o.alice.token, `/api/backup-runs/${started.body.data.runId}`);
    assert.equal(run.status, 'succeeded');
    return { ...o, policyId, runId: run.id as string };
  }

  it('`backups destinations create` makes a local destination; `destinations` lists it, `--json` too', async () => {
    const { cli, destDir } = await owner();
    const res = await cli.run(['backups', 'destinations', 'create', '--name', 'nightly', '--kind', 'local', '--path', destDir, '--json']);
    assert.equal(res.code, 0, res.stderr);
    const d = JSON.parse(res.stdout);
    assert.equal(d.kind, 'local');
    assert.equal(d.path, destDir);
    const [table, json] = await Promise.all([cli.run(['backups', 'destinations']), cli.run(['backups', 'destinations', 'list', '--json'])]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, new RegExp(`${d.id}\\s+nightly\\s+local\\s+${destDir}`));
    assert.deepEqual(JSON.parse(json.stdout).map((x: any) => x.id), [d.id]);
  });

  it('`destinations create` refusals: a relative path names the field (1), a bad --kind or a missing --name is usage (2)', async () => {
    const { cli, destDir } = await owner();
    const [rel, kind, name] = await Promise.all([
      cli.run(['backups', 'destinations', 'create', '--name', 'x', '--kind', 'local', '--path', 'relative/dir']),
      cli.run(['backups', 'destinations', 'create', '--name', 'x', '--kind', 'ftp']),
      cli.run(['backups', 'destinations', 'create', '--kind', 'local', '--path', destDir]),
    ]);
    assert.equal(rel.code, 1);
    assert.match(rel.stderr, /^error: .*absolute.* \(field: path\) \[VALIDATION_FAILED\]$/m);
    assert.equal(kind.code, 2);
    assert.match(kind.stderr, /--kind must be local or s3/);
    assert.equal(name.code, 2);
  });

  it('`destinations test` answers ok (0) for a writable folder and 1 when the probe fails', async () => {
    const { cli } = await withDestination();
    const ok = await cli.run(['backups', 'destinations', 'test', 'nightly']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^nightly: ok \(\d+ ms\)$/m);
    // A folder that became a file after the destination was saved: the probe is refused naming the path.
    const dir = tempDir();
    const broken = JSON.parse((await cli.run(['backups', 'destinations', 'create', '--name', 'broken', '--kind', 'local', '--path', path.join(dir, 'sub'), '--json'])).stdout);
    writeFileSync(path.join(dir, 'sub'), 'not a folder');
    const bad = await cli.run(['backups', 'destinations', 'test', broken.id, '--json']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /not a folder.*\(field: path\)/);
  });

  it('`policies create PROJECT` takes the destination by name, cron, time zone and retention', async () => {
    const { cli, project, destinationId } = await withDestination();
    const res = await cli.run(['backups', 'policies', 'create', project.slug, '--destination', 'nightly', '--cron', '0 3 * * *', '--timezone', 'Europe/Paris', '--retain-count', '3', '--retain-days', '30', '--json']);
    assert.equal(res.code, 0, res.stderr);
    const pol = JSON.parse(res.stdout);
    assert.equal(pol.destinationId, destinationId);
    assert.equal(pol.serviceId, project.dataServiceId);
    assert.equal(pol.cronExpression, '0 3 * * *');
    assert.equal(pol.timezone, 'Europe/Paris');
    assert.equal(pol.retainCount, 3);
    assert.equal(pol.retainDays, 30);
    assert.ok(!('webhookToken' in pol));
    const list = await cli.run(['backups', 'policies', project.slug]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, new RegExp(`${pol.id}\\s+${destinationId}\\s+${project.dataServiceId}\\s+0 3 \\* \\* \\* \\(Europe/Paris\\)\\s+3 runs / 30 days\\s+yes`));
  });

  it('`policies create --webhook` prints the webhook token once; --service takes a service name', async () => {
    const { cli, project, destinationId } = await withDestination();
    const res = await cli.run(['backups', 'policies', 'create', project.id, '--destination', destinationId, '--service', 'data', '--webhook']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, new RegExp(`^created policy \\S+ of ${project.slug} to nightly: manual runs only$`, 'm'));
    assert.match(res.stdout, /^webhook token \(shown once\): \S+$/m);
    const missing = await cli.run(['backups', 'policies', 'create', project.id, '--destination', destinationId, '--service', 'nope']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /has no service "nope".*data/);
  });

  it('`policies create` refusals: a bad cron (1, naming the field), a bad --retain-count or no --destination (2)', async () => {
    const { cli, project } = await withDestination();
    const [cron, retain, dest, foreign] = await Promise.all([
      cli.run(['backups', 'policies', 'create', project.slug, '--destination', 'nightly', '--cron', 'not a cron']),
      cli.run(['backups', 'policies', 'create', project.slug, '--destination', 'nightly', '--retain-count', '0']),
      cli.run(['backups', 'policies', 'create', project.slug]),
      cli.run(['backups', 'policies', 'create', project.slug, '--destination', 'no-such-destination']),
    ]);
    assert.equal(cron.code, 1);
    assert.match(cron.stderr, /\(field: cronExpression\) \[INVALID_CRON\]/);
    assert.equal(retain.code, 2);
    assert.equal(dest.code, 2);
    assert.match(dest.stderr, /--destination/);
    assert.equal(foreign.code, 1);
  });

  it('`backups run POLICY` follows the run to its end (0) and `backups list` shows it', async () => {
    const { cli, project, alice, destinationId } = await withDestination();
    const policyId = (await createPolicy(server, alice, project, { destinationId })).id;
    const res = await cli.run(['backups', 'run', policyId, '--json']);
    assert.equal(res.code, 0, res.stderr);
    const run = JSON.parse(res.stdout);
    assert.equal(run.status, 'succeeded');
    assert.match(res.stderr, /run \S+ started/);
    const runId = run.id;
    const list = await cli.run(['backups', 'list', project.slug, '--json']);
    assert.equal(list.code, 0, list.stderr);
    const out = JSON.parse(list.stdout);
    assert.ok(out.policies.some((p: any) => p.id === policyId));
    assert.deepEqual(out.runs.map((r: any) => r.id), [runId]);
    const table = await cli.run(['backups', 'list', project.slug]);
    assert.match(table.stdout, new RegExp(`${runId}\\s+succeeded\\s+manual`));
  });

  it('`backups restore RUN` without a terminal and without --yes refuses (1) before staging anything', async () => {
    const { cli, project, runId } = await withRun();
    writeFileSync(path.join(project.volume, 'notes.txt'), 'version two\n');
    const res = await cli.run(['backups', 'restore', runId]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /no terminal to ask on, so pass --yes/);
    const staged = await server.ctx.db.selectFrom('backupRestores').select('id').where('runId', '=', runId).execute();
    assert.equal(staged.length, 0);
    assert.equal(readFileSync(path.join(project.volume, 'notes.txt'), 'utf8'), 'version two\n');
  });

  it('on a terminal `backups restore RUN` asks: no cancels the staged restore (1), yes restores (0)', async () => {
    const { cli, project, runId } = await withRun();
    writeFileSync(path.join(project.volume, 'notes.txt'), 'version two\n');
    const no = await cli.runInTerminal(['backups', 'restore', runId], 'n\n');
    assert.equal(no.code, 1, no.stdout);
    assert.match(no.stdout, /replaces: the volume service "data" of project keeper/);
    assert.match(no.stdout, /Replace the data now\? \[y\/N\]/);
    assert.match(no.stdout, /not restored: the staged restore was cancelled/);
    const staged = await server.ctx.db.selectFrom('backupRestores').select(['id', 'status']).where('runId', '=', runId).execute();
    assert.deepEqual(staged.map((r) => r.status), ['cancelled']);
    assert.equal(readFileSync(path.join(project.volume, 'notes.txt'), 'utf8'), 'version two\n');
    const yes = await cli.runInTerminal(['backups', 'restore', runId], 'y\n');
    assert.equal(yes.code, 0, yes.stdout);
    assert.match(yes.stdout, /restore \S+ succeeded/);
    assert.equal(readFileSync(path.join(project.volume, 'notes.txt'), 'utf8'), 'version one\n');
  });

  it('`backups restore RUN --yes` shows what it replaces, applies and follows the restore to success (0)', async () => {
    const { cli, project, runId } = await withRun();
    writeFileSync(path.join(project.volume, 'notes.txt'), 'version two\n');
    const res = await cli.run(['backups', 'restore', runId, '--yes', '--json']);
    assert.equal(res.code, 0, res.stderr);
    const done = JSON.parse(res.stdout);
    assert.equal(done.status, 'succeeded');
    assert.equal(done.runId, runId);
    assert.match(res.stderr, /replaces: the volume service "data" of project keeper/);
    assert.match(res.stderr, new RegExp(`with: +backup run ${runId} of `));
    assert.match(res.stderr, /applying/);
    assert.equal(readFileSync(path.join(project.volume, 'notes.txt'), 'utf8'), 'version one\n');
    const plain = await cli.run(['backups', 'restore', runId, '--yes']);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(lines(plain.stdout).at(-1)!, /^restore \S+ succeeded$/);
  });

  it("`backups restore` of another org's run is refused (1); without RUN it is a usage error (2)", async () => {
    const { cli, runId } = await withRun();
    const bob = await createUser(server);
    const [foreign, usage] = await Promise.all([cliUser(server, bob.token).run(['backups', 'restore', runId, '--yes']), cli.run(['backups', 'restore'])]);
    assert.equal(foreign.code, 1);
    assert.match(foreign.stderr, /NOT_FOUND/);
    assert.equal(usage.code, 2);
  });
});
