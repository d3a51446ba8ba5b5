// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * `--json` on every command that prints data (docs/cli.md): walks the real commander tree, checks
 * each leaf command takes `--json` (or is exempt, with the reason below), and runs each one as the
 * real binary against a real server, parsing its stdout as JSON. A command added without `--json`,
 * or without a run here (or a named suite that parses its JSON), fails this suite.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import { createDeployment, createProject, createUser, type TestProject, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { cliUser, lines, type CliUser } from './commands-support.js';

/** Commands that print no data, so they have no `--json`. */
const EXEMPT: Record<string, string> = {
  serve: 'runs the server until stopped; what it prints is its log',
  completion: 'prints a shell script to be sourced, not data',
  'services connect': "runs the database's own client (psql, mysql, redis-cli): what it prints is the client's (commands-services.test.ts)",
};

/**
 * Commands whose `--json` needs real builds or a backup run; the suite named parses their JSON.
 * (`logs --follow --json` streams JSON lines until stopped: commands-logs.test.ts.)
 */
const ELSEWHERE: Record<string, string> = {
  deploy: 'deploy.test.ts (`--project <slug>` ... `--json`, `--no-wait --json`)',
  rollback: 'commands-rollback.test.ts (`rollback PROJECT DEPLOYMENT --json`)',
  promote: 'commands-rollback.test.ts (`promote PROJECT ENV --json`)',
  'backups run': 'commands-backups.test.ts (`backups run POLICY --json`)',
  'backups restore': 'commands-backups.test.ts (`backups restore RUN --yes --json`)',
  'admin create-user': 'cli.test.ts (prints one JSON line, with or without --json)',
  'transfer to-cloud': 'commands-transfer.test.ts (`transfer to-cloud PROJECT --json`, against a linked cloud)',
  'transfer to-self-hosted': 'commands-transfer.test.ts (`transfer to-self-hosted PROJECT --json`)',
};

/** Every leaf command of the tree, by its path (`backups destinations list`). */
function leaves(c: Command, prefix: string[] = []): Map<string, Command> {
  const out = new Map<string, Command>();
  for (const sub of c.commands) {
    const name = [...prefix, sub.name()];
    if (sub.commands.length) for (const [k, v] of leaves(sub, name)) out.set(k, v);
    else out.set(name.join(' '), sub);
  }
  return out;
}

describe('--json on every command that prints data', () => {
  let server: TestServer;
  let owner: TestUser;
  let member: TestUser;
  let project: TestProject;
  let queued: string;
  let cli: CliUser;
  const work = tempDir('berth-cli-json-');
  const backupDir = tempDir('berth-cli-json-dest-');
  /** Values later runs use, taken from earlier runs' JSON. */
  const got: Record<string, any> = {};

  before(async () => {
    server = await startTestServer();
    owner = await createUser(server, { team: true });
    member = await createUser(server, { orgId: owner.orgId, role: 'member' });
    project = await createProject(server, owner, { name: 'Json Shop' });
    queued = await createDeployment(server, project, { status: 'queued' });
    cli = cliUser(server, owner.token);
  });
  after(() => server?.close());

  /**
   * One run per command, in this order (later ones use what earlier ones printed); `jsonLines`:
   * one JSON document per line.
   */
  const RUNS: [string, () => string[], { input?: () => string; jsonLines?: boolean; keep?: (out: any) => void }?][] = [
    ['whoami', () => ['whoami', '--json']],
    ['token create', () => ['token', 'create', '--name', 'json-check', '--json'], { keep: (t) => (got.tokenId = t.id) }],
    ['token list', () => ['token', 'list', '--json']],
    ['token revoke', () => ['token', 'revoke', got.tokenId, '--json']],
    ['projects', () => ['projects', '--json']],
    ['open', () => ['open', project.slug, '--json']],
    ['status', () => ['status', project.slug, '--json']],
    ['deployments', () => ['deployments', project.slug, '--json']],
    ['cancel', () => ['cancel', queued, '--json']],
    ['domains add', () => ['domains', 'add', project.slug, 'json-shop.example.test', '--json']],
    ['domains ls', () => ['domains', 'ls', project.slug, '--json']],
    ['domains verify', () => ['domains', 'verify', project.slug, 'json-shop.example.test', '--json']],
    ['domains rm', () => ['domains', 'rm', project.slug, 'json-shop.example.test', '--json']],
    ['env set', () => ['env', 'set', project.slug, 'GREETING=hi', '--json']],
    ['env list', () => ['env', 'list', project.slug, '--json']],
    ['env unset', () => ['env', 'unset', project.slug, 'GREETING', '--json']],
    ['env pull', () => ['env', 'pull', project.slug, path.join(work, 'pulled.env'), '--json']],
    ['orgs', () => ['orgs', '--json']],
    ['switch', () => ['switch', owner.orgId, '--json']],
    ['logs', () => ['logs', project.slug, '--json'], { jsonLines: true }],
    ['backups destinations create', () => ['backups', 'destinations', 'create', '--name', 'json-dest', '--kind', 'local', '--path', backupDir, '--json'], { keep: (d) => (got.destinationId = d.id) }],
    ['backups destinations list', () => ['backups', 'destinations', 'list', '--json']],
    ['backups destinations test', () => ['backups', 'destinations', 'test', got.destinationId, '--json']],
    ['backups policies create', () => ['backups', 'policies', 'create', project.slug, '--destination', 'json-dest', '--json']],
    ['backups policies list', () => ['backups', 'policies', 'list', project.slug, '--json']],
    ['backups list', () => ['backups', 'list', project.slug, '--json']],
    ['services create', () => ['services', 'create', project.slug, 'redis', 'json-cache', '--json']],
    ['services ls', () => ['services', 'ls', project.slug, '--json']],
    ['services logs', () => ['services', 'logs', project.slug, 'json-cache', '--json'], { jsonLines: true }],
    ['services rm', () => ['services', 'rm', project.slug, 'json-cache', '--json']],
    ['members ls', () => ['members', 'ls', '--json']],
    ['members invite', () => ['members', 'invite', 'json-invitee@example.test', '--grant', `project:${project.slug}:read`, '--json'], { keep: (i) => (got.invitationId = i.id) }],
    ['invitations ls', () => ['invitations', 'ls', '--json']],
    ['invitations revoke', () => ['invitations', 'revoke', got.invitationId, '--json']],
    ['members rm', () => ['members', 'rm', member.email, '--json']],
    ['login', () => ['login', '--server', server.url, '--email', owner.email, '--password-stdin', '--json'], { input: () => owner.password + '\n' }],
  ];

  it('every command takes --json, but the exempt ones, which print no data', () => {
    const tree = leaves(buildProgram());
    for (const name of Object.keys({ ...EXEMPT, ...ELSEWHERE })) assert.ok(tree.has(name), `${name} is listed here but is not a command`);
    const missing = [...tree].filter(([name, c]) => !EXEMPT[name] && !c.options.some((o) => o.long === '--json')).map(([name]) => name);
    assert.deepEqual(missing, [], 'commands without --json');
  });

  it('every command with --json is run here (or parsed by the suite named in ELSEWHERE), exactly once', () => {
    const tree = [...leaves(buildProgram()).keys()].filter((n) => !EXEMPT[n]).sort();
    const covered = [...RUNS.map(([name]) => name), ...Object.keys(ELSEWHERE)];
    assert.equal(new Set(covered).size, covered.length, 'a command is covered twice');
    assert.deepEqual([...covered].sort(), tree);
  });

  it('each run exits 0 and prints parseable JSON on stdout (notes go to stderr)', async () => {
    for (const [name, argv, opts = {}] of RUNS) {
      const res = await cli.run(argv(), { cwd: work, input: opts.input?.() });
      assert.equal(res.code, 0, `${name}: ${res.stderr}`);
      if (opts.jsonLines) {
        for (const l of lines(res.stdout)) assert.doesNotThrow(() => JSON.parse(l), `${name}: ${l}`);
        continue;
      }
      let out: unknown;
      assert.doesNotThrow(() => (out = JSON.parse(res.stdout)), `${name} printed: ${res.stdout}`);
      assert.equal(typeof out, 'object', `${name}: ${res.stdout}`);
      opts.keep?.(out);
    }
  });

  it('an error with --json prints nothing on stdout and one error line on stderr (exit 1)', async () => {
    const res = await cli.run(['open', 'no-such-project', '--json'], { cwd: work });
    assert.equal(res.code, 1);
    assert.equal(res.stdout, '');
    assert.match(res.stderr, /^error: no project "no-such-project"/);
  });
});
