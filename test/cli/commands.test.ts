// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
/**
 * The client commands of contract section 12 (other than deploy), run as the real binary against a
 * real server: projects, open, deployments, cancel, env list|set|unset|pull, orgs and switch,
 * completion, and their exit codes (0 done, 1 refused by the server, 2 usage).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseEnv } from 'node:util';
import { writeLink } from '../../src/cli/link.js';
import { createDeployment, createProject, createUser, type TestProject, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { cliUser, lines, type CliUser } from './commands-support.js';

describe('berth client commands', () => {
  let server: TestServer;
  let alice: TestUser;
  let bob: TestUser;
  let project: TestProject;
  let other: TestProject;
  let cli: CliUser;

  before(async () => {
    server = await startTestServer();
    alice = await createUser(server);
    bob = await createUser(server);
    project = await createProject(server, alice, { name: 'Shop Front' });
    other = await createProject(server, bob, { name: 'Bobs App' });
    cli = cliUser(server, alice.token);
  });
  after(() => server?.close());

  describe('projects and open', () => {
    it('`projects` lists the projects in a table, `--json` as the API records', async () => {
      const table = await cli.run(['projects']);
      assert.equal(table.code, 0, table.stderr);
      assert.match(lines(table.stdout)[0]!, /^ID\s+SLUG\s+STATUS/);
      assert.match(table.stdout, new RegExp(`${project.id}\\s+${project.slug}\\s+enabled`));
      assert.doesNotMatch(table.stdout, new RegExp(other.id));
      const json = await cli.run(['projects', '--json']);
      assert.equal(json.code, 0, json.stderr);
      assert.deepEqual(JSON.parse(json.stdout).map((p: any) => p.id), [project.id]);
    });

    it('`open PROJECT` prints the URL of the project info, and `open` in a linked folder needs no argument', async () => {
      const info = await server.api(alice.token).get(`/api/projects/${project.id}/info`);
      const url = info.body.data.runtime.url;
      assert.match(url, /^https?:\/\//);
      const byName = await cli.run(['open', project.slug]);
      assert.equal(byName.code, 0, byName.stderr);
      assert.equal(byName.stdout.trim(), url);
      const dir = tempDir('berth-linked-');
      writeLink(dir, { projectId: project.id, orgId: alice.orgId, server: server.url });
      const linked = await cli.run(['open'], { cwd: dir });
      assert.equal(linked.code, 0, linked.stderr);
      assert.equal(linked.stdout.trim(), url);
      const json = await cli.run(['open', project.id, '--json']);
      assert.deepEqual(JSON.parse(json.stdout), { project: project.id, url, state: info.body.data.runtime.state });
    });

    it('`status` prints the app\'s state, its URL and last build (the reason too when degraded); --json the info', async () => {
      const info = (await server.api(alice.token).get(`/api/projects/${project.id}/info`)).body.data;
      const res = await cli.run(['status', project.slug]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, new RegExp(`^STATE  ${info.runtime.state.replace(/_/g, ' ')}$`, 'm'));
      assert.match(res.stdout, new RegExp(`^URL    ${info.runtime.url.replace(/[.]/g, '\\.')}$`, 'm'));
      assert.doesNotMatch(res.stdout, /REASON/);
      const json = JSON.parse((await cli.run(['status', project.slug, '--json'])).stdout);
      assert.equal(json.project, project.id);
      assert.deepEqual(json.runtime, info.runtime);
    });

    it('`open` outside a linked folder is a usage error (2); another org\'s project is refused (1)', async () => {
      const bare = await cli.run(['open'], { cwd: tempDir() });
      assert.equal(bare.code, 2);
      assert.match(bare.stderr, /name a project/);
      const foreign = await cli.run(['open', other.id]);
      assert.equal(foreign.code, 1);
      assert.match(foreign.stderr, /^error: no project/m);
      assert.doesNotMatch(foreign.stderr, /\n\s+at /, 'no stack trace');
    });

    it('a saved token the server does not know is refused (1) with its message and code', async () => {
      const res = await cliUser(server, 'berth_pat_nope').run(['projects']);
      assert.equal(res.code, 1);
      assert.match(res.stderr, /^error: .* \[UNAUTHENTICATED\]$/m);
    });
  });

  describe('deployments and cancel', () => {
    let ids: string[];
    before(async () => {
      ids = [];
      for (const status of ['ready', 'failed', 'ready']) {
        ids.push(await createDeployment(server, project, { status }));
        await new Promise((r) => setTimeout(r, 15));
      }
      await server.ctx.db.updateTable('deployments').set({ error: 'build failed: exit 1' }).where('id', '=', ids[1]!).execute();
    });

    it('`deployments PROJECT` lists newest first with id, status, trigger, environment, age and error', async () => {
      const res = await cli.run(['deployments', project.slug]);
      assert.equal(res.code, 0, res.stderr);
      const rows = lines(res.stdout);
      assert.match(rows[0]!, /ID\s+STATUS\s+TRIGGER\s+ENVIRONMENT\s+SOURCE\s+AGE\s+ERROR/);
      const order = ids.map((id) => res.stdout.indexOf(id));
      assert.ok(order.every((i) => i > 0));
      assert.ok(order[2]! < order[1]! && order[1]! < order[0]!, 'newest first');
      const failed = rows.find((r) => r.includes(ids[1]!))!;
      assert.match(failed, /failed\s+api\s+production\s+api\s+\d+s\s+build failed: exit 1$/);
    });

    it('`deployments --json` answers the records with `current` a boolean; -n limits them; a linked folder names the project', async () => {
      const dir = tempDir('berth-linked-');
      writeLink(dir, { projectId: project.id, orgId: alice.orgId, server: server.url });
      const res = await cli.run(['deployments', '--json', '-n', '2'], { cwd: dir });
      assert.equal(res.code, 0, res.stderr);
      const list = JSON.parse(res.stdout);
      assert.deepEqual(list.map((d: any) => d.id), [ids[2], ids[1]]);
      for (const d of list) assert.equal(typeof d.current, 'boolean');
      // The marker column carries `*` on the record the server calls current, and nothing else.
      const table = await cli.run(['deployments', project.id]);
      const marked = lines(table.stdout).filter((l) => l.startsWith('*'));
      const current = JSON.parse((await cli.run(['deployments', project.id, '--json'])).stdout).filter((d: any) => d.current);
      assert.equal(marked.length, current.length);
    });

    it('`deployments` usage errors exit 2: a bad -n, no project outside a linked folder', async () => {
      const bad = await cli.run(['deployments', project.id, '-n', '0']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /--limit must be a whole number from 1 to 200/);
      const none = await cli.run(['deployments'], { cwd: tempDir() });
      assert.equal(none.code, 2);
    });

    it('`cancel DEPLOYMENT` cancels a queued deployment (0); again, the server refuses (1)', async () => {
      const queued = await createDeployment(server, project, { status: 'queued', finished: false });
      const res = await cli.run(['cancel', queued]);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stdout.trim(), `deployment ${queued} is cancelled`);
      const rec = await server.api(alice.token).get(`/api/deployments/${queued}`);
      assert.equal(rec.body.data.status, 'cancelled');
      const again = await cli.run(['cancel', queued, '--json']);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /^error: the deployment is already cancelled \[CONFLICT\]$/m);
      const q2 = await createDeployment(server, project, { status: 'queued', finished: false });
      const json = await cli.run(['cancel', q2, '--json']);
      assert.equal(json.code, 0, json.stderr);
      assert.equal(JSON.parse(json.stdout).status, 'cancelled');
    });

    it("`cancel` of another org's deployment is 1 (not found); without an argument 2", async () => {
      const theirs = await createDeployment(server, other, { status: 'queued', finished: false });
      const res = await cli.run(['cancel', theirs]);
      assert.equal(res.code, 1);
      assert.match(res.stderr, /NOT_FOUND/);
      const rec = await server.api(bob.token).get(`/api/deployments/${theirs}`);
      assert.equal(rec.body.data.status, 'queued');
      const missing = await cli.run(['cancel']);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /missing required argument/);
    });
  });

  describe('env', () => {
    const values: Record<string, string> = {
      GREETING: 'hello world',
      URL: 'https://shop.example.test/a?b=c&d=e',
      QUOTED: `it's "quoted"`,
      HASH: 'a#b # c',
      MULTI: 'line one\nline "two"',
      DOLLAR: '$HOME and ${PATH}',
      EMPTY: '',
    };

    before(async () => {
      const set = await cli.run(['env', 'set', project.slug, ...Object.entries(values).map(([k, v]) => `${k}=${v}`)]);
      assert.equal(set.code, 0, set.stderr);
      const secret = await cli.run(['env', 'set', project.slug, '--secret', 'API_KEY=sk-live-123', 'DB_PASSWORD=hunter2']);
      assert.equal(secret.code, 0, secret.stderr);
    });

    it('`env list` masks secrets; `--json` answers the API records', async () => {
      const res = await cli.run(['env', 'list', project.slug]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /API_KEY\s+\*{8}\s+secret/);
      assert.doesNotMatch(res.stdout, /sk-live-123|hunter2/);
      const json = JSON.parse((await cli.run(['env', 'list', project.slug, '--json'])).stdout);
      assert.equal(json.find((v: any) => v.key === 'GREETING').value, 'hello world');
      assert.equal(json.find((v: any) => v.key === 'API_KEY').isSecret, true);
    });

    it('`env pull PROJECT` writes .env.local (0600): plain values that parse back exactly, secrets as empty lines under a comment', async () => {
      const dir = tempDir('berth-pull-');
      const res = await cli.run(['env', 'pull', project.slug], { cwd: dir });
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /wrote 9 variables of .* to \.env\.local \(2 secrets left empty\)/);
      const file = path.join(dir, '.env.local');
      assert.equal(statSync(file).mode & 0o777, 0o600);
      const text = readFileSync(file, 'utf8');
      assert.doesNotMatch(text, /sk-live-123|hunter2|\*{8}/);
      assert.match(text, /^# API_KEY is a secret: its value is not shown\nAPI_KEY=\n/m);
      assert.match(text, /^# DB_PASSWORD is a secret: its value is not shown\nDB_PASSWORD=\n/m);
      assert.match(text, /^GREETING='hello world'$/m);
      assert.match(text, /^EMPTY=$/m);
      const parsed = parseEnv(text);
      assert.deepEqual(parsed, { ...values, API_KEY: '', DB_PASSWORD: '' });
    });

    it('`env pull` refuses to overwrite a file (1, with a hint) unless --yes, which rewrites it 0600', async () => {
      const dir = tempDir('berth-pull-');
      const file = path.join(dir, 'prod.env');
      writeFileSync(file, 'KEEP=me\n', { mode: 0o644 });
      const refused = await cli.run(['env', 'pull', project.slug, 'prod.env'], { cwd: dir });
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /prod\.env exists: pass --yes to overwrite it/);
      assert.equal(readFileSync(file, 'utf8'), 'KEEP=me\n');
      const yes = await cli.run(['env', 'pull', project.slug, file, '--yes']);
      assert.equal(yes.code, 0, yes.stderr);
      assert.equal(statSync(file).mode & 0o777, 0o600);
      assert.equal(parseEnv(readFileSync(file, 'utf8')).GREETING, 'hello world');
    });

    it('`env pull -e` reads another environment; `--json` prints the entries with secrets null', async () => {
      const envCreate = await server.api(alice.token).post(`/api/projects/${project.id}/environments`, { name: 'staging' });
      assert.equal(envCreate.status, 201, envCreate.text);
      assert.equal((await cli.run(['env', 'set', project.slug, '-e', 'staging', 'ONLY=staging'])).code, 0);
      const dir = tempDir('berth-pull-');
      const res = await cli.run(['env', 'pull', project.slug, 'staging.env', '-e', 'staging', '--json'], { cwd: dir });
      assert.equal(res.code, 0, res.stderr);
      const out = JSON.parse(res.stdout);
      assert.equal(out.environment, 'staging');
      assert.equal(out.file, path.join(dir, 'staging.env'));
      // A new environment starts with production's variables (contract section 16), then has its own.
      const prod = JSON.parse((await cli.run(['env', 'pull', project.slug, 'p.env', '--json'], { cwd: dir })).stdout);
      assert.deepEqual(prod.entries.find((e: any) => e.key === 'API_KEY'), { key: 'API_KEY', value: null, isSecret: true });
      assert.equal(prod.entries.find((e: any) => e.key === 'ONLY'), undefined, 'staging-only variable is not production\'s');
      const keys = (entries: any[]) => entries.map((e) => e.key).sort();
      assert.deepEqual(keys(out.entries), [...keys(prod.entries), 'ONLY'].sort());
      assert.deepEqual(out.entries.find((e: any) => e.key === 'ONLY'), { key: 'ONLY', value: 'staging', isSecret: false });
      assert.deepEqual(out.entries.find((e: any) => e.key === 'API_KEY'), { key: 'API_KEY', value: null, isSecret: true });
    });

    it("`env pull` of another org's project is refused (1) and writes nothing; no project is a usage error (2)", async () => {
      const dir = tempDir('berth-pull-');
      const res = await cli.run(['env', 'pull', other.id], { cwd: dir });
      assert.equal(res.code, 1);
      assert.ok(!existsSync(path.join(dir, '.env.local')));
      const usage = await cli.run(['env', 'pull'], { cwd: dir });
      assert.equal(usage.code, 2);
    });

    it('`env unset` removes only the keys named; a bad key is refused naming the field (1)', async () => {
      assert.equal((await cli.run(['env', 'unset', project.slug, 'EMPTY'])).code, 0);
      const json = JSON.parse((await cli.run(['env', 'list', project.slug, '--json'])).stdout);
      assert.ok(!json.some((v: any) => v.key === 'EMPTY'));
      assert.ok(json.some((v: any) => v.key === 'GREETING'));
      const bad = await cli.run(['env', 'set', project.slug, '1BAD=x']);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /\(field: [^)]+\) \[VALIDATION_FAILED\]/);
    });
  });

  describe('orgs and switch', () => {
    let multi: TestUser;
    let team: TestUser;
    let teamProject: TestProject;
    let own: TestProject;
    let mcli: CliUser;

    before(async () => {
      multi = await createUser(server);
      team = await createUser(server, { team: true });
      await createUser(server, { orgId: team.orgId, email: multi.email, role: 'admin' });
      await server.ctx.db.updateTable('orgs').set({ name: 'Acme Team' }).where('id', '=', team.orgId).execute();
      own = await createProject(server, multi, { name: 'Personal Thing' });
      teamProject = await createProject(server, team, { name: 'Team Thing' });
      mcli = cliUser(server, multi.token);
    });

    it('`orgs` lists the orgs of the user, marking the active one; `--json` with `active`', async () => {
      const res = await mcli.run(['orgs']);
      assert.equal(res.code, 0, res.stderr);
      const rows = lines(res.stdout);
      assert.match(rows[0]!, /ID\s+NAME\s+ROLE\s+KIND/);
      assert.match(rows.find((r) => r.includes(multi.orgId))!, /^\*\s+\S+\s+.*\s+owner\s+personal$/);
      assert.match(rows.find((r) => r.includes(team.orgId))!, /^\s+\S+\s+Acme Team\s+admin\s+team$/);
      const json = JSON.parse((await mcli.run(['orgs', '--json'])).stdout);
      assert.deepEqual(json.map((o: any) => [o.id, o.active]).sort(), [[multi.orgId, true], [team.orgId, false]].sort());
    });

    it('`switch ORG` (by name) mints and stores a token for that org: `projects` then lists its projects', async () => {
      const res = await mcli.run(['switch', 'acme team']);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stdout.trim(), `now acting in Acme Team (${team.orgId}) as admin`);
      const cfg = mcli.config();
      assert.notEqual(cfg.token, multi.token);
      assert.equal(statSync(mcli.configFile).mode & 0o777, 0o600);
      assert.equal(cfg.orgTokens![team.orgId]!.token, cfg.token);
      assert.equal(cfg.orgTokens![multi.orgId]!.token, multi.token);
      const me = await server.api(cfg.token).get('/api/auth/me');
      assert.equal(me.body.data.org.id, team.orgId);
      const projects = JSON.parse((await mcli.run(['projects', '--json'])).stdout);
      assert.deepEqual(projects.map((p: any) => p.id), [teamProject.id]);
      const orgs = JSON.parse((await mcli.run(['orgs', '--json'])).stdout);
      assert.equal(orgs.find((o: any) => o.active).id, team.orgId);
    });

    it('`switch` back (by id) reuses the saved token; a revoked saved token is replaced by a fresh one', async () => {
      const back = await mcli.run(['switch', multi.orgId, '--json']);
      assert.equal(back.code, 0, back.stderr);
      assert.deepEqual(JSON.parse(back.stdout), { id: multi.orgId, name: JSON.parse(back.stdout).name, isTeam: false, role: 'owner', active: true });
      assert.equal(mcli.config().token, multi.token);
      assert.deepEqual(JSON.parse((await mcli.run(['projects', '--json'])).stdout).map((p: any) => p.id), [own.id]);
      // Revoke the team token: the next switch mints another instead of storing a dead one.
      const teamToken = mcli.config().orgTokens![team.orgId]!.token;
      const tokens = await server.api(teamToken).get('/api/auth/tokens');
      const mine = tokens.body.data.find((t: any) => teamToken.startsWith(t.prefix) && !t.revokedAt);
      assert.equal((await server.api(teamToken).delete(`/api/auth/tokens/${mine.id}`)).status, 200);
      const again = await mcli.run(['switch', team.orgId]);
      assert.equal(again.code, 0, again.stderr);
      const fresh = mcli.config().token!;
      assert.notEqual(fresh, teamToken);
      assert.equal((await server.api(fresh).get('/api/auth/me')).body.data.org.id, team.orgId);
    });

    it('`switch` to an org the user is not in is refused (1) and keeps the config; without ORG it is a usage error (2)', async () => {
      const before = readFileSync(mcli.configFile, 'utf8');
      const res = await mcli.run(['switch', bob.orgId]);
      assert.equal(res.code, 1);
      assert.match(res.stderr, /you are not a member of an org/);
      assert.equal(readFileSync(mcli.configFile, 'utf8'), before);
      assert.equal((await mcli.run(['switch'])).code, 2);
    });
  });

  describe('completion', () => {
    it('`completion bash` prints a script walking the command tree that bash completes with', async () => {
      const res = await cli.run(['completion', 'bash']);
      assert.equal(res.code, 0, res.stderr);
      for (const word of ['deploy', 'rollback', 'domains', 'switch', 'completion']) assert.match(res.stdout, new RegExp(`'\\|${word}'\\)`));
      const script = path.join(tempDir(), 'berth.bash');
      writeFileSync(script, res.stdout);
      const complete = (words: string[]) => {
        const arr = words.map((w) => `'${w}'`).join(' ');
        const out = spawnSync('bash', ['-c', `source '${script}'; COMP_WORDS=(${arr}); COMP_CWORD=${words.length - 1}; _berth_completion; echo "\${COMPREPLY[*]}"`], { encoding: 'utf8' });
        assert.equal(out.status, 0, out.stderr);
        return out.stdout.trim().split(' ');
      };
      assert.deepEqual(complete(['berth', 'roll']), ['rollback']);
      assert.deepEqual(complete(['berth', 'env', 'p']), ['pull']);
      assert.deepEqual(complete(['berth', 'backups', 'destinations', 'cr']), ['create']);
      assert.deepEqual(complete(['berth', 'env', 'pull', 'shop', '--y']), ['--yes']);
      assert.ok(complete(['berth', 'logs', '--']).includes('--since'));
      assert.ok(complete(['berth', 'domains', '']).includes('verify'));
    });

    it('`completion zsh` prints a compdef script with the commands and their descriptions', async () => {
      const res = await cli.run(['completion', 'zsh']);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^#compdef berth\n/);
      assert.match(res.stdout, /compdef _berth berth/);
      assert.match(res.stdout, /'deploy:[^']+'/);
      assert.match(res.stdout, /'rollback:serve an earlier ready deployment[^']*'/);
      assert.match(res.stdout, /'env pull'\)/);
    });

    it('`completion fish` and `completion` alone are usage errors (2)', async () => {
      const fish = await cli.run(['completion', 'fish']);
      assert.equal(fish.code, 2);
      assert.match(fish.stderr, /bash and zsh/);
      assert.equal((await cli.run(['completion'])).code, 2);
    });
  });

  it('an unknown command or option is a usage error (2)', async () => {
    assert.equal((await cli.run(['deploymnets'])).code, 2);
    assert.equal((await cli.run(['projects', '--nope'])).code, 2);
  });
});
