// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * `berth logs`: timestamps on every line (stderr lines on stderr), --since (ISO or relative; a bad
 * value is a usage error), -n, --json (one object per line), --build DEPLOYMENT, and --follow, which
 * prints the backlog once and then live lines.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { createDeployment, createProject, createUser, type TestProject, type TestUser } from '../support/factories.js';
import { startTestServer, type TestServer } from '../support/harness.js';
import { waitFor } from '../support/wait.js';
import { cliUser, lines, type CliUser } from './commands-support.js';

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const H = 3_600_000;

describe('berth logs', () => {
  let server: TestServer;
  let alice: TestUser;
  let project: TestProject;
  let foreign: TestProject;
  let cli: CliUser;
  let build: string;
  let buildStart: string;
  const runtime = [
    { ts: ago(3 * H), stream: 'stdout' as const, line: 'booting v1' },
    { ts: ago(2 * H), stream: 'stderr' as const, line: 'warning: cache cold' },
    { ts: ago(30 * 60_000), stream: 'stdout' as const, line: 'GET / 200' },
    { ts: ago(60_000), stream: 'stdout' as const, line: 'GET /health 200' },
  ];

  before(async () => {
    server = await startTestServer();
    alice = await createUser(server);
    const bob = await createUser(server);
    project = await createProject(server, alice, { name: 'Loggy' });
    foreign = await createProject(server, bob, { name: 'Hidden' });
    const rt = getRuntime(server.ctx);
    for (const l of runtime) rt.logs.runtime(project.id).append(l);
    build = await createDeployment(server, project, { status: 'failed' });
    buildStart = ago(5 * 60_000);
    rt.logs.build(project.id, build).append({ ts: buildStart, stream: 'stdout', line: '$ npm run build' });
    rt.logs.build(project.id, build).append({ ts: ago(4 * 60_000), stream: 'stderr', line: 'error: missing script' });
    cli = cliUser(server, alice.token);
  });
  after(() => server?.close());

  it('prints the runtime log with a timestamp on every line, stderr lines on stderr', async () => {
    const res = await cli.run(['logs', project.slug]);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(lines(res.stdout), [`${runtime[0]!.ts}  booting v1`, `${runtime[2]!.ts}  GET / 200`, `${runtime[3]!.ts}  GET /health 200`]);
    assert.deepEqual(lines(res.stderr), [`${runtime[1]!.ts}  warning: cache cold`]);
  });

  it('--since takes a relative time (90m, 1d) or an ISO time; -n keeps the last N lines', async () => {
    const [rel, day, iso, last] = await Promise.all([
      cli.run(['logs', project.slug, '--since', '90m']),
      cli.run(['logs', project.slug, '--since', '1d', '-n', '2']),
      cli.run(['logs', project.slug, '--since', runtime[2]!.ts]),
      cli.run(['logs', project.slug, '-n', '1']),
    ]);
    assert.equal(rel.code, 0, rel.stderr);
    assert.deepEqual(lines(rel.stdout), [`${runtime[2]!.ts}  GET / 200`, `${runtime[3]!.ts}  GET /health 200`]);
    assert.equal(rel.stderr, '');
    assert.deepEqual(lines(day.stdout), [`${runtime[2]!.ts}  GET / 200`, `${runtime[3]!.ts}  GET /health 200`]);
    assert.deepEqual(lines(iso.stdout), [`${runtime[3]!.ts}  GET /health 200`], 'strictly after the time');
    assert.deepEqual(lines(last.stdout), [`${runtime[3]!.ts}  GET /health 200`]);
  });

  it('--json prints one JSON object per line, on stdout for both streams', async () => {
    const res = await cli.run(['logs', project.slug, '--json']);
    assert.equal(res.code, 0, res.stderr);
    // Each line as the API gives it, with the kept log it came from (`source`, contract section 20).
    assert.deepEqual(lines(res.stdout).map((l) => JSON.parse(l)), runtime.map((l) => ({ ...l, source: 'runtime' })));
  });

  it('a bad --since or -n is a usage error (2) that names the option', async () => {
    const [since, word, limit] = await Promise.all([
      cli.run(['logs', project.slug, '--since', '5x']),
      cli.run(['logs', project.slug, '--since', 'yesterday']),
      cli.run(['logs', project.slug, '-n', 'lots']),
    ]);
    assert.equal(since.code, 2);
    assert.match(since.stderr, /--since takes an ISO time .* not "5x"/);
    assert.equal(word.code, 2);
    assert.equal(limit.code, 2);
    assert.match(limit.stderr, /--limit must be a whole number/);
  });

  it("--build DEPLOYMENT prints that deployment's build log; with another project named it is refused", async () => {
    const res = await cli.run(['logs', '--build', build]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^\S+Z {2}\$ npm run build\n$/);
    assert.match(res.stderr, /^\S+Z {2}error: missing script\n$/);
    const withProject = await cli.run(['logs', project.slug, '--build', build, '--json']);
    assert.equal(withProject.code, 0, withProject.stderr);
    assert.deepEqual(lines(withProject.stdout).map((l) => JSON.parse(l).line), ['$ npm run build', 'error: missing script']);
    const other = await createProject(server, alice, { name: 'Other' });
    const wrong = await cli.run(['logs', other.slug, '--build', build]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /is not a deployment of/);
  });

  it('--build --follow of a finished build prints its log once and ends with its status', async () => {
    const res = await cli.run(['logs', '--build', build, '--follow', '--since', buildStart]);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout, '');
    assert.deepEqual(lines(res.stderr).filter((l) => !l.startsWith('deployment ')).length, 1);
    assert.match(res.stderr, /error: missing script/);
    assert.match(res.stderr, new RegExp(`deployment ${build} is failed`));
  });

  it('--follow prints the backlog once, then live lines as the app writes them', async () => {
    const follow = cli.start(['logs', project.slug, '--follow', '--since', '2h']);
    try {
      await waitFor(() => follow.stdout().includes('GET /health 200'), 'the backlog', 30000);
      const live = { ts: new Date().toISOString(), stream: 'stdout' as const, line: 'live line after follow' };
      getRuntime(server.ctx).logs.runtime(project.id).append(live);
      await waitFor(() => follow.stdout().includes('live line after follow'), 'the live line', 15000);
      const live2 = { ts: new Date().toISOString(), stream: 'stderr' as const, line: 'live error line' };
      getRuntime(server.ctx).logs.runtime(project.id).append(live2);
      await waitFor(() => follow.stderr().includes('live error line'), 'the live stderr line', 15000);
      assert.deepEqual(lines(follow.stdout()), [`${runtime[2]!.ts}  GET / 200`, `${runtime[3]!.ts}  GET /health 200`, `${live.ts}  live line after follow`]);
      assert.deepEqual(lines(follow.stderr()), [`${live2.ts}  live error line`]);
    } finally {
      await follow.stop();
    }
  });

  it("another org's project is refused (1); no project outside a linked folder is a usage error (2)", async () => {
    const [foreignRes, none] = await Promise.all([cli.run(['logs', foreign.id]), cli.run(['logs'])]);
    assert.equal(foreignRes.code, 1);
    assert.match(foreignRes.stderr, /no project/);
    assert.equal(none.code, 2);
  });
});
