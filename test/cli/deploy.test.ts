// @store-independent: `berth deploy` reaches the store only through the HTTP API (packing, progress, the build log, linking): the API and deployment suites run on both stores
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, startServe, type RunResult, type ServeProcess } from '../support/cli.js';
import { freshPostgresDatabase, tempDir, usingPostgres } from '../support/harness.js';
import { waitForDeployment } from '../support/wait.js';

/**
 * `berth deploy [DIR]` end to end (contract section 12): the real CLI against a real `berth serve`
 * (jobs, builds and the edge running), signed in with `berth login`.
 */

/** A tiny Node app without dependencies: `npm start` answers `version <v>` on $PORT. */
function writeApp(dir: string, version: string, extraScripts: Record<string, string> = {}): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'tiny', version: '1.0.0', private: true, scripts: { start: 'node server.js', ...extraScripts } }, null, 2));
  writeFileSync(
    path.join(dir, 'server.js'),
    `require('node:http').createServer((req, res) => res.end('version ${version}')).listen(Number(process.env.PORT), () => console.log('listening'));\n`,
  );
  return dir;
}

/** GET / through the edge proxy, as the host the project's URL names. */
function viaEdge(url: string): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: Number(u.port), path: '/', headers: { host: u.host } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      })
      .on('error', reject);
  });
}

/** The last line of stdout: the URL a successful deploy prints. */
const lastLine = (r: RunResult) => r.stdout.trim().split('\n').pop() ?? '';

describe('berth deploy [DIR]', () => {
  const dataDir = tempDir();
  const home = tempDir('berth-home-');
  /** The config homes of the cases' own users. */
  const homes: string[] = [];
  const work = tempDir('berth-deploy-work-');
  let serveEnv: Record<string, string>;
  let pg: { url: string; drop(): Promise<void> } | undefined;
  let serve: ServeProcess;

  /** The CLI's environment: its own config home, no server or token inherited from the test run. */
  const cliEnv = (configHome = home): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...process.env, ...serveEnv, XDG_CONFIG_HOME: configHome, HOME: configHome };
    delete env.BERTH_SERVER;
    delete env.BERTH_TOKEN;
    return env;
  };
  const berth = (args: string[], cwd = work, configHome = home) => runCli(args, { cwd, baseEnv: cliEnv(configHome), timeoutMs: 180000 });
  /** GET `p` as the holder of `token`: the answer's data (200 asserted). */
  const apiAs = (token: string) => async (p: string) => {
    const res = await fetch(`${serve.url}${p}`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200, `${p}: ${res.status}`);
    return ((await res.json()) as { data: any }).data;
  };

  /**
   * A user (and org) of a case's own, signed in with `berth login` in a config home of its own, so
   * that the projects the case counts are its own: the config home and an API reader as that user.
   */
  const signedIn = async (name: string): Promise<{ home: string; api: (p: string) => Promise<any> }> => {
    const userHome = tempDir(`berth-home-${name}-`);
    homes.push(userHome);
    const created = await berth(['admin', 'create-user', '--email', `${name}@example.test`, '--password', 'dev-password-1']);
    assert.equal(created.code, 0, created.stderr);
    const login = await runCli(['login', '--server', serve.url, '--email', `${name}@example.test`, '--password-stdin'], { cwd: work, baseEnv: cliEnv(userHome), input: 'dev-password-1\n' });
    assert.equal(login.code, 0, login.stderr);
    return { home: userHome, api: apiAs(JSON.parse(created.stdout).token) };
  };

  /** Deploys `dir` as the user of config home `userHome` (exit 0 asserted); answers the URL it printed. */
  const deployed = async (dir: string, userHome: string): Promise<string> => {
    const res = await berth(['deploy'], dir, userHome);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    return lastLine(res);
  };

  before(async () => {
    // A silent build step shows its still-running line after 1 s instead of 30 (contract section 18).
    serveEnv = { BERTH_DATA_DIR: dataDir, BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_EDGE_PORT: '0', BERTH_LOG_LEVEL: 'warn', BERTH_SILENT_STEP_SECONDS: '1' };
    if (usingPostgres()) {
      pg = await freshPostgresDatabase();
      serveEnv.DATABASE_URL = pg.url;
    } else serveEnv.DATABASE_URL = '';
    serve = await startServe(['--port', '0', '--host', '127.0.0.1'], serveEnv);
    const created = await berth(['admin', 'create-user', '--email', 'dev@example.test', '--password', 'dev-password-1']);
    assert.equal(created.code, 0, created.stderr);
    const login = await runCli(['login', '--server', serve.url, '--email', 'dev@example.test', '--password-stdin'], { cwd: work, baseEnv: cliEnv(), input: 'dev-password-1\n' });
    assert.equal(login.code, 0, login.stderr);
  });
  after(async () => {
    await serve?.stop();
    await pg?.drop();
    for (const d of [dataDir, home, work, ...homes]) rmSync(d, { recursive: true, force: true });
  });

  it('deploys a folder: streams the build log, waits until ready, prints the URL the edge serves, links the folder', async () => {
    const { home: userHome, api } = await signedIn('first');
    const app = writeApp(path.join(work, 'hello-app'), 'one');
    writeFileSync(path.join(app, '.gitignore'), '*.log\n');
    const res = await berth(['deploy', 'hello-app'], work, userHome);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stderr, /packing +\[#+\] 100% 3\/3 files/);
    assert.match(res.stderr, /uploading \[#+\] 100%/);
    assert.match(res.stderr, /detected node \(npm\)/);
    assert.match(res.stdout, /\[berth\] building dpl_/, 'the build log is streamed on stdout');
    const url = lastLine(res);
    assert.match(url, /^http:\/\/hello-app\.localhost:\d+$/);
    assert.equal((await viaEdge(url)).text, 'version one');

    const link = JSON.parse(readFileSync(path.join(app, '.berth', 'project.json'), 'utf8'));
    const me = await api('/api/auth/me');
    const projects = await api('/api/projects');
    assert.equal(projects.length, 1);
    const projectId = projects[0].id;
    assert.deepEqual(link, { projectId, orgId: me.org.id, server: serve.url });
    assert.equal(readFileSync(path.join(app, '.gitignore'), 'utf8'), '*.log\n.berth\n');
  });

  it('a second deploy from the linked folder updates the same project', async () => {
    const { home: userHome, api } = await signedIn('second');
    const url = await deployed(writeApp(path.join(work, 'second-app'), 'one'), userHome);
    const [{ id: projectId, slug }] = await api('/api/projects');
    const app = writeApp(path.join(work, 'second-app'), 'two');
    const res = await berth(['deploy'], app, userHome);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stderr, new RegExp(`updated project ${slug} \\(${projectId}\\)`));
    assert.equal(lastLine(res), url);
    assert.equal((await viaEdge(url)).text, 'version two');
    assert.equal((await api('/api/projects')).length, 1);
    const deployments = await api(`/api/projects/${projectId}/deployments`);
    assert.deepEqual(
      deployments.map((d: any) => [d.status, d.trigger, d.current]),
      [
        ['ready', 'upload', true],
        ['ready', 'upload', false],
      ],
    );
  });

  it('`--project <slug>` from an unlinked copy updates that project; `--json` prints only { project, deployment, url }', async () => {
    const { home: userHome, api } = await signedIn('copied');
    const url = await deployed(writeApp(path.join(work, 'copied-app'), 'two'), userHome);
    const [{ id: projectId, slug }] = await api('/api/projects');
    const copy = path.join(work, 'copy');
    cpSync(path.join(work, 'copied-app'), copy, { recursive: true });
    rmSync(path.join(copy, '.berth'), { recursive: true });
    writeApp(copy, 'three');
    const res = await berth(['deploy', copy, '--project', slug, '--json'], work, userHome);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    const out = JSON.parse(res.stdout);
    assert.deepEqual(Object.keys(out).sort(), ['deployment', 'project', 'url']);
    assert.equal(out.project.id, projectId);
    assert.equal(out.deployment.projectId, projectId);
    assert.equal(out.deployment.status, 'ready');
    assert.equal(out.url, url);
    assert.match(res.stderr, /\[berth\] building dpl_/, 'with --json the build log goes to stderr');
    assert.equal((await viaEdge(url)).text, 'version three');
    assert.equal((await api('/api/projects')).length, 1);
    assert.equal((await api(`/api/projects/${projectId}/deployments`)).length, 2, 'the first deploy\'s and this one');
    assert.equal(JSON.parse(readFileSync(path.join(copy, '.berth', 'project.json'), 'utf8')).projectId, projectId);
  });

  it('`--no-wait` returns once the deployment is queued', async () => {
    const { home: userHome, api } = await signedIn('nowait');
    const res = await berth(['deploy', '--no-wait', '--json'], writeApp(path.join(work, 'no-wait-app'), 'one'), userHome);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    const out = JSON.parse(res.stdout);
    assert.ok(['queued', 'building'].includes(out.deployment.status), out.deployment.status);
    assert.equal(out.url, null);
    assert.doesNotMatch(res.stderr, /\[berth\] building/, 'no build log is streamed');
    // It goes on to build on the server.
    const done = await waitForDeployment({ get: async (p: string) => ({ body: { data: await api(p) } }) }, out.deployment.id, 120000);
    assert.equal(done.status, 'ready', done.error);
  });

  it('a failing build exits 1 with the error and the last lines of the build log on stderr; the folder is linked, and a .gitignore holding .berth is made', async () => {
    const app = writeApp(path.join(work, 'broken-app'), 'x', { build: 'echo BUILD-MARKER-42 && exit 1' });
    const res = await berth(['deploy', app]);
    assert.equal(res.code, 1, res.stderr + res.stdout);
    const [, summary = ''] = res.stderr.split(/deployment dpl_\S+ failed/);
    assert.match(summary, /last \d+ lines of the build log:/);
    assert.match(summary, /BUILD-MARKER-42/);
    assert.doesNotMatch(res.stderr, /\n\s+at .*\(.*\.ts:\d+/, 'no stack trace');
    assert.ok(existsSync(path.join(app, '.berth', 'project.json')), 'the folder is linked even though the build failed');
    // The folder had no .gitignore: one was made, keeping the link out of git.
    assert.equal(readFileSync(path.join(app, '.gitignore'), 'utf8'), '.berth\n');
    assert.equal(statSync(path.join(app, '.gitignore')).mode & 0o777, 0o644);
  });

  it('`--install-command`, `--build-command`, `--start-command` are saved to the project\'s config before the deployment, which runs them; the build log streams a silent step\'s still-running line', async () => {
    const { home: userHome, api } = await signedIn('commands');
    const url = await deployed(writeApp(path.join(work, 'commands-app'), 'three'), userHome);
    const [{ id: projectId }] = await api('/api/projects');
    const app = writeApp(path.join(work, 'commands-app'), 'four');
    writeFileSync(path.join(app, 'quiet-build.js'), "setTimeout(() => require('node:fs').writeFileSync('built.txt', 'built quietly'), 2500);\n");
    writeFileSync(path.join(app, 'serve-built.js'), "require('node:http').createServer((req, res) => res.end(require('node:fs').readFileSync('built.txt', 'utf8'))).listen(Number(process.env.PORT));\n");
    const res = await berth(['deploy', '--install-command', 'node -e "console.log(1 + 1)"', '--build-command', 'node quiet-build.js', '--start-command', 'node serve-built.js'], app, userHome);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stderr, /--build-command: saved to the project's config as buildCommand \(this and later deployments use it\): node quiet-build\.js/);
    assert.match(res.stderr, /--start-command: saved to the project's config as startCommand/);
    assert.match(res.stderr, /--install-command: saved to the project's config as installCommand/);
    assert.match(res.stdout, /^\[berth\] install: node -e "console\.log\(1 \+ 1\)"$/m);
    assert.match(res.stdout, /^\[berth\] still running: build: node quiet-build\.js \(\d+ s without output\)$/m, res.stdout);
    assert.equal((await viaEdge(url)).text, 'built quietly');
    const config = (await api(`/api/projects/${projectId}`)).config;
    assert.deepEqual([config.installCommand, config.buildCommand, config.startCommand], ['node -e "console.log(1 + 1)"', 'node quiet-build.js', 'node serve-built.js']);
    // An empty value clears the saved one: the detected plan's command is used again.
    const cleared = await berth(['deploy', '--install-command', '', '--build-command', '', '--start-command', ''], app, userHome);
    assert.equal(cleared.code, 0, cleared.stderr + cleared.stdout);
    assert.match(cleared.stderr, /--start-command: cleared the project's startCommand; the detected plan's is used/);
    assert.equal((await viaEdge(url)).text, 'version four');
    const after = (await api(`/api/projects/${projectId}`)).config;
    assert.deepEqual([after.installCommand, after.buildCommand, after.startCommand], [null, null, null]);
  });

  it('`--env feature-x` creates the missing preview environment, deploys to it and prints the preview URL the edge serves as the last line', async () => {
    const { home: userHome, api } = await signedIn('preview');
    const url = await deployed(writeApp(path.join(work, 'preview-app'), 'four'), userHome);
    const [{ id: projectId, slug }] = await api('/api/projects');
    const app = writeApp(path.join(work, 'preview-app'), 'preview');
    const res = await berth(['deploy', '--env', 'feature-x'], app, userHome);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stderr, /created the preview environment feature-x \(served at http:\/\/\S+; production's variables copied\)/);
    assert.doesNotMatch(res.stderr, /not served|\/api\/projects/, 'no raw API route, no claim that the edge does not serve it');
    const previewUrl = lastLine(res);
    assert.match(previewUrl, new RegExp(`^http://feature-x--${slug}\\.localhost:\\d+$`));
    assert.equal((await viaEdge(previewUrl)).text, 'version preview');
    assert.equal((await viaEdge(url)).text, 'version four', 'production keeps its release');
    const envs = await api(`/api/projects/${projectId}/environments`);
    assert.deepEqual(envs.map((e: any) => [e.name, e.type]).sort(), [['feature-x', 'preview'], ['production', 'production']]);
    assert.equal(envs.find((e: any) => e.name === 'feature-x').url, previewUrl);
  });

  it('`--no-cache` builds without the project\'s build cache, and the streamed build log says so', async () => {
    const app = writeApp(path.join(work, 'uncached-app'), 'uncached');
    const res = await berth(['deploy', '--no-cache'], app);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    const url = lastLine(res);
    assert.match(res.stdout, /^\[berth\] cache: not used \(noCache\): nothing restored, nothing saved$/m);
    assert.doesNotMatch(res.stdout, / MB (restored|saved)|nothing to restore yet/);
    assert.equal((await viaEdge(url)).text, 'version uncached');
  });

  it('an --env name the server cannot take is a usage error (2) before anything is packed or uploaded', async () => {
    const res = await berth(['deploy', '--env', 'Feature_X'], writeApp(path.join(work, 'bad-env-app'), 'x'));
    assert.equal(res.code, 2, res.stderr + res.stdout);
    assert.match(res.stderr, /error: --env must be lowercase letters, digits and dashes .*"Feature_X"/);
    assert.doesNotMatch(res.stderr, /uploading|packed/, 'nothing was packed or uploaded');
  });

  it('an unknown option is a usage error (exit 2)', async () => {
    const res = await berth(['deploy', '--bogus']);
    assert.equal(res.code, 2, res.stderr);
    assert.match(res.stderr, /unknown option '--bogus'/);
  });

  it('a folder linked to a project of another org is a usage error naming it (exit 2)', async () => {
    const { home: userHome, api } = await signedIn('foreign');
    const app = writeApp(path.join(work, 'foreign'), 'x');
    mkdirSync(path.join(app, '.berth'));
    writeFileSync(path.join(app, '.berth', 'project.json'), JSON.stringify({ projectId: 'prj_elsewhere', orgId: 'org_elsewhere', server: serve.url }));
    const res = await berth(['deploy', app], work, userHome);
    assert.equal(res.code, 2, res.stderr);
    assert.match(res.stderr, /linked to a project of org org_elsewhere/);
    assert.equal((await api('/api/projects')).length, 0, 'nothing was created');
  });

  it('not logged in: exit 1 with the login hint', async () => {
    const empty = tempDir('berth-nologin-');
    try {
      const res = await berth(['deploy', writeApp(path.join(work, 'unsigned-app'), 'x')], work, empty);
      assert.equal(res.code, 1, res.stderr);
      assert.match(res.stderr, /not logged in: run `berth login/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
