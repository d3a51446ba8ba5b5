// @store-independent: what it checks is the runtime's (sandbox, network, files), the same on either store.
/**
 * Per-project build caches (contract section 21, issue 39 point 1), on the sandbox runtime through the
 * API, with a real dependency from the npm registry: the second build of a project restores npm's cache
 * that the first saved (said in the log with sizes), the cache belongs to the project's uid, another
 * project's build can neither read nor write it, a preview starts from a copy of production's and
 * writes only its own, the cache is cut back to BERTH_BUILD_CACHE_MB least recently used first, and it
 * goes with the project.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '60';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { createUser } from '../support/factories.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { waitForDeployment } from '../support/wait.js';

const IS_NUMBER_INTEGRITY = 'sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==';

function write(dir: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

/** An app using is-number@7 from the registry (with its lockfile: `npm ci`); its build step runs `probe.js`. */
function writeApp(dir: string, probe: string): string {
  return write(dir, {
    'package.json': JSON.stringify({ name: path.basename(dir), version: '1.0.0', private: true, scripts: { build: 'node probe.js', start: 'node server.js' }, dependencies: { 'is-number': '7.0.0' } }, null, 2),
    'package-lock.json': JSON.stringify(
      {
        name: path.basename(dir),
        version: '1.0.0',
        lockfileVersion: 3,
        requires: true,
        packages: {
          '': { name: path.basename(dir), version: '1.0.0', dependencies: { 'is-number': '7.0.0' } },
          'node_modules/is-number': { version: '7.0.0', resolved: 'https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz', integrity: IS_NUMBER_INTEGRITY, engines: { node: '>=0.12.0' } },
        },
      },
      null,
      2,
    ),
    'probe.js': probe,
    'server.js': "require('node:http').createServer((req, res) => res.end(String(require('is-number')('42')))).listen(Number(process.env.PORT));\n",
  });
}

describe('per-project build caches (sandbox runtime, a real dependency from the npm registry)', () => {
  let root: string;
  let data: string;
  let server: TestServer;
  let api: HttpClient;
  let pg: { url: string; drop(): Promise<void> } | undefined;

  before(async () => {
    root = tempDir('berth-buildcache-');
    data = path.join(root, 'data');
    mkdirSync(path.join(root, 'local'), { recursive: true });
    if (usingPostgres()) pg = await freshPostgresDatabase();
    server = await startTestServer({ background: true, dataDir: data, databaseUrl: pg?.url, flags: { runtime: 'sandbox' }, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_BUILD_CACHE_MB: '1' } });
    await getRuntime(server.ctx).restored;
    api = server.api((await createUser(server)).token);
  });
  after(async () => {
    await server?.close();
    await pg?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const edge = (slug: string) => edgeRequest(getRuntime(server.ctx).edgePort(), `${slug}.localhost`, '/');
  const cacheOf = (projectId: string, environment = 'production') => path.join(data, 'build-cache', projectId, environment);

  async function importApp(name: string, probe: string): Promise<{ id: string; slug: string }> {
    const dir = writeApp(path.join(root, 'local', name), probe);
    const res = await api.post('/api/projects/import', { path: dir, name });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  }

  /** Deploys and waits; answers the deployment and its build log's lines. */
  async function deploy(projectId: string, environment = 'production'): Promise<{ d: any; lines: string[]; log: string }> {
    const started = await api.post('/api/deployments', { projectId, environment });
    assert.equal(started.status, 202, started.text);
    const d = await waitForDeployment(api, started.body.data.id, 300_000);
    const lines: string[] = (await api.get(`/api/deployments/${d.id}/logs?limit=2000`)).body.data.map((l: { line: string }) => l.line);
    const log = lines.join('\n');
    assert.equal(d.status, 'ready', `${d.error}\n${log}`);
    return { d, lines, log };
  }

  /** The probe of a project that has built once (it prints this line in its build step). */
  const BUILT = "console.log('probe: built');\n";

  /**
   * A project of its own (imported from the folder `name` of the local root) that has built once: its
   * install (a real `npm ci`) saved npm's cache and kept the installed dependencies for its next build.
   */
  async function builtOnce(name: string, probe = BUILT): Promise<{ project: { id: string; slug: string }; dir: string; first: Awaited<ReturnType<typeof deploy>> }> {
    const project = await importApp(name, probe);
    const first = await deploy(project.id);
    return { project, dir: path.join(root, 'local', name), first };
  }

  test("a project's first build saves npm's cache, its next build restores it (sizes in the log), and the cache is the project's uid's alone", async () => {
    const { project: owner, dir, first } = await builtOnce('cache-owner', "console.log('probe: uid ' + process.getuid() + ' cache ' + process.env.npm_config_cache);\n");
    assert.ok(first.lines.includes('[berth] cache: nothing to restore yet'), first.log);
    assert.match(first.log, /^\[berth\] cache: npm \d+(\.\d+)? MB saved$/m);
    assert.ok(first.lines.includes('probe: uid ' + statSync(cacheOf(owner.id)).uid + ' cache /cache/npm'), first.log);
    const st = statSync(cacheOf(owner.id));
    assert.notEqual(st.uid, 0);
    assert.equal(st.mode & 0o777, 0o700);
    assert.ok(readdirSync(path.join(cacheOf(owner.id), 'npm')).includes('_cacache'));

    assert.match(first.log, /^\[berth\] cache: installed dependencies kept for the next build \(\d+\.\d MB\)$/m);
    // A change of the source that leaves the lockfile alone: the cache is restored and the install reused.
    writeFileSync(path.join(dir, 'probe.js'), "console.log('probe: second');\n");
    const second = await deploy(owner.id);
    assert.match(second.log, /^\[berth\] cache: npm \d+(\.\d+)? MB restored$/m);
    assert.ok(second.lines.includes(`[berth] install: reused the dependencies the last build (${first.d.id}) installed (lockfile, install command and runtime unchanged): npm ci skipped`), second.log);
    assert.ok(!second.lines.includes('[berth] install: npm ci'), second.log);
    assert.ok(second.lines.includes('probe: second'), second.log);
    // The app runs with the reused dependency, owned by the project's uid like the rest of its folder.
    assert.equal((await edge(owner.slug)).text, 'true');
    const release = (await server.ctx.db.selectFrom('deploymentBuilds').select('releaseDir').where('deploymentId', '=', second.d.id).executeTakeFirstOrThrow()).releaseDir!;
    assert.equal(statSync(path.join(release, 'node_modules', 'is-number', 'index.js')).uid, statSync(cacheOf(owner.id)).uid);
  });

  test('a changed lockfile installs as usual, and its install is the one kept next', async () => {
    const { project, dir } = await builtOnce('cache-lockfile');
    const lockFile = path.join(dir, 'package-lock.json');
    const lock = JSON.parse(readFileSync(lockFile, 'utf8'));
    lock.packages[''].description = 'changed';
    writeFileSync(lockFile, JSON.stringify(lock, null, 2));
    const third = await deploy(project.id);
    assert.ok(third.lines.includes('[berth] install: npm ci'), third.log);
    assert.ok(!third.log.includes('install: reused'), third.log);
    writeFileSync(path.join(dir, 'probe.js'), "console.log('probe: fourth');\n");
    const fourth = await deploy(project.id);
    assert.ok(fourth.log.includes('[berth] install: reused the dependencies the last build ('), fourth.log);
  });

  test('a build step that writes into reused dependencies changes only its own release: the kept install and the next build see them as installed', async () => {
    const { project, dir } = await builtOnce('cache-kept-write');
    const keptFile = path.join(data, 'build-cache', project.id, '.installed', 'production', 'node_modules', 'is-number', 'index.js');
    const original = readFileSync(keptFile, 'utf8');
    // The build step replaces the package's code and adds a file beside it, as the project's uid.
    const probe = [
      "const fs = require('node:fs');",
      "fs.writeFileSync('node_modules/is-number/index.js', 'module.exports = () => \"poisoned\";\\n');",
      "fs.writeFileSync('node_modules/planted.js', 'x');",
      "console.log('probe: wrote ' + process.getuid());",
      '',
    ].join('\n');
    writeFileSync(path.join(dir, 'probe.js'), probe);
    const second = await deploy(project.id);
    assert.ok(second.log.includes('[berth] install: reused the dependencies the last build ('), second.log);
    assert.match(second.log, /^probe: wrote \d+$/m);
    assert.equal((await edge(project.slug)).text, 'poisoned', 'the release is what its build made');
    assert.equal(readFileSync(keptFile, 'utf8'), original, 'the kept install is as its install left it');
    assert.ok(!existsSync(path.join(path.dirname(path.dirname(keptFile)), 'planted.js')));
    // The next build (reusing the install again) starts from the kept install, not from the last build's writes.
    writeFileSync(path.join(dir, 'probe.js'), "console.log('probe: sees ' + require('node:fs').readFileSync('node_modules/is-number/index.js', 'utf8').includes('poisoned') + ' ' + require('node:fs').existsSync('node_modules/planted.js'));\n");
    const third = await deploy(project.id);
    assert.ok(third.log.includes('[berth] install: reused the dependencies the last build ('), third.log);
    assert.ok(third.lines.includes('probe: sees false false'), third.log);
    assert.equal((await edge(project.slug)).text, 'true');
    // The running release's dependencies are links to the kept install where its build did not change them
    // (build-release-links.ts), and a later build that writes into them changes only its own release.
    const releaseDir = (await server.ctx.db.selectFrom('deploymentBuilds').select('releaseDir').where('deploymentId', '=', third.d.id).executeTakeFirstOrThrow()).releaseDir!;
    const running = path.join(releaseDir, 'node_modules', 'is-number', 'index.js');
    // Mounted (and so linked) where builds have their own disk images (this suite runs with BERTH_DISK_LIMITS=off:
    // copied; test/runtime/build-disk.test.ts has the linked release on real images).
    if (getRuntime(server.ctx).releases.diskLimits.enforced) assert.equal(statSync(running).ino, statSync(keptFile).ino, 'the release links the kept file');
    writeFileSync(path.join(dir, 'probe.js'), probe.replace('poisoned', 'poisoned again'));
    const fourth = await deploy(project.id);
    assert.ok(fourth.log.includes('[berth] install: reused the dependencies the last build ('), fourth.log);
    assert.equal(readFileSync(running, 'utf8'), original, "the last release's file is as its build left it");
    assert.equal(readFileSync(keptFile, 'utf8'), original);
    assert.equal((await edge(project.slug)).text, 'poisoned again');
    // Nothing of the build's stays mounted.
    assert.ok(!readFileSync('/proc/self/mountinfo', 'utf8').includes(path.join(data, 'builds')), 'no mount left under the builds folder');
  });

  test("an unchanged source and plan reuse the last ready build's release whole (no install, no build step, said in the log); a changed variable builds again", async () => {
    const { project } = await builtOnce('cache-reuse');
    const last = await deploy(project.id);
    assert.match(last.log, /^\[berth\] build: reused the output of the last ready build \(\S+\): source and plan unchanged, install and build skipped$/m);
    assert.ok(!last.log.includes('install: npm ci') && !last.log.includes('probe: built') && !last.log.includes('install: reused'), last.log);
    assert.equal((await edge(project.slug)).text, 'true');
    // The release is the previous one's files, linked (a release is read-only to its app).
    const dirs = await server.ctx.db.selectFrom('deploymentBuilds').select(['deploymentId', 'releaseDir']).where('releaseDir', 'is not', null).execute();
    const releaseOf = (id: string) => dirs.find((r) => r.deploymentId === id)!.releaseDir!;
    const before = readFileSync(path.join(data, 'build-cache', project.id, '.outputs', 'production.json'), 'utf8');
    assert.equal(JSON.parse(before).deploymentId, last.d.id);
    assert.equal(statSync(path.join(releaseOf(last.d.id), 'server.js')).nlink > 1, true);
    const vars = await api.patch(`/api/projects/${project.id}/env`, { environment: 'production', upserts: [{ key: 'NEW_VAR', value: 'x', isSecret: false }], deletes: [] });
    assert.equal(vars.status, 200, vars.text);
    const rebuilt = await deploy(project.id);
    assert.ok(!rebuilt.log.includes('reused the output'), rebuilt.log);
    assert.ok(rebuilt.log.includes('probe: built'), rebuilt.log);
  });

  test("another project's build step can neither read nor write the project's cache", async () => {
    const { project: owner } = await builtOnce('cache-target');
    const target = cacheOf(owner.id);
    const probe = [
      "const fs = require('node:fs');",
      `const target = ${JSON.stringify(target)};`,
      "const tryIt = (what, fn) => { try { fn(); console.log('probe: ' + what + ' allowed'); } catch (e) { console.log('probe: ' + what + ' refused ' + e.code); } };",
      "tryIt('read', () => fs.readdirSync(target + '/npm'));",
      "tryIt('write', () => fs.writeFileSync(target + '/npm/planted', 'poison'));",
      "tryIt('read via parent', () => fs.readdirSync(target + '/..'));",
      "console.log('probe: own cache holds ' + JSON.stringify(fs.readdirSync('/cache')));",
      '',
    ].join('\n');
    const other = await importApp('cache-other', probe);
    const { lines, log } = await deploy(other.id);
    assert.ok(!lines.some((l) => / allowed$/.test(l)), log);
    assert.match(log, /^probe: read refused (ENOENT|EACCES)$/m);
    assert.match(log, /^probe: write refused (ENOENT|EACCES)$/m);
    assert.ok(lines.includes('probe: own cache holds ["npm"]'), log);
    assert.ok(!existsSync(path.join(target, 'npm', 'planted')));
    // Each project its own uid: the other's cache is not the owner's.
    assert.notEqual(statSync(cacheOf(other.id)).uid, statSync(target).uid);
  });

  test("a preview's first build restores a copy of production's cache and writes only its own", async () => {
    const { project: owner, dir } = await builtOnce('cache-preview');
    const env = await api.post(`/api/projects/${owner.id}/environments`, { name: 'feat' });
    assert.equal(env.status, 201, env.text);
    // The preview's build writes a marker into its npm cache.
    writeFileSync(path.join(dir, 'probe.js'), "require('node:fs').writeFileSync(process.env.npm_config_cache + '/marker', process.env.BERTH_DEPLOYMENT_ID);\n");
    const { log } = await deploy(owner.id, 'feat');
    assert.match(log, /^\[berth\] cache: npm \d+(\.\d+)? MB restored \(from production\)$/m);
    assert.ok(log.includes("[berth] install: reused the dependencies production's last build ("), log);
    assert.ok(existsSync(path.join(cacheOf(owner.id, 'feat'), 'npm', 'marker')));
    assert.ok(!existsSync(path.join(cacheOf(owner.id), 'npm', 'marker')), "production's cache is not the preview's to write");
    assert.equal(statSync(cacheOf(owner.id, 'feat')).uid, statSync(cacheOf(owner.id)).uid);
  });

  test('after a build the cache is cut back to BERTH_BUILD_CACHE_MB, least recently used files first', async () => {
    const { project: owner, dir } = await builtOnce('cache-prune');
    // 2 MB nobody used since 2001, over the 1 MB this server allows.
    const stale = path.join(cacheOf(owner.id), 'npm', 'stale-entry');
    writeFileSync(stale, Buffer.alloc(2 * 1024 * 1024, 1));
    utimesSync(stale, new Date('2001-01-01'), new Date('2001-01-01'));
    // A changed source: the next deploy builds (restoring the cache) rather than reusing the release.
    writeFileSync(path.join(dir, 'probe.js'), "console.log('probe: built again');\n");
    const { log } = await deploy(owner.id);
    assert.match(log, /^\[berth\] cache: npm 2(\.\d+)? MB restored$/m);
    assert.match(log, /^\[berth\] cache: over BERTH_BUILD_CACHE_MB \(1 MB\): \d+ least recently used files removed \(2(\.\d)? MB\)$/m);
    assert.ok(!existsSync(stale));
    // What the build used is kept: the package's index entries are younger than the stale file.
    assert.ok(readdirSync(path.join(cacheOf(owner.id), 'npm')).includes('_cacache'));
  });

  test('`noCache: true` builds without the cache: nothing restored or saved, the log says so, the cache is left as it was', async () => {
    const { project: owner } = await builtOnce('cache-nocache');
    const bad = await api.post('/api/deployments', { projectId: owner.id, noCache: 'yes' });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.text, /noCache/);
    const mark = path.join(cacheOf(owner.id), 'npm', 'untouched');
    writeFileSync(mark, 'x');
    utimesSync(mark, new Date('2020-01-01'), new Date('2020-01-01'));
    const started = await api.post('/api/deployments', { projectId: owner.id, noCache: true });
    assert.equal(started.status, 202, started.text);
    const d = await waitForDeployment(api, started.body.data.id, 300_000);
    const lines: string[] = (await api.get(`/api/deployments/${d.id}/logs?limit=2000`)).body.data.map((l: { line: string }) => l.line);
    assert.equal(d.status, 'ready', `${d.error}\n${lines.join('\n')}`);
    assert.ok(lines.includes('[berth] cache: not used (noCache): nothing restored, nothing saved'), lines.join('\n'));
    assert.ok(!lines.some((l) => / MB (restored|saved)/.test(l)), lines.join('\n'));
    // Neither read nor pruned: its times are as they were.
    assert.equal(statSync(mark).mtime.getUTCFullYear(), 2020);
    assert.equal(statSync(mark).atime.getUTCFullYear(), 2020);
  });

  test('a cache that cannot be opened never fails the build: it runs without one and says so', async () => {
    const broken = await importApp('cache-broken', "console.log('probe: built');\n");
    // Where the project's cache folder would be, a file: no folder can be made there.
    mkdirSync(path.join(data, 'build-cache'), { recursive: true });
    writeFileSync(path.join(data, 'build-cache', broken.id), 'not a folder');
    const { lines, log } = await deploy(broken.id);
    assert.ok(lines.includes('[berth] cache: not used: it could not be opened (the server log says why)'), log);
    assert.ok(!log.includes(data), 'no host path of the data dir in the log');
  });

  test('the build cache goes with the project', async () => {
    const { project: owner } = await builtOnce('cache-delete');
    assert.ok(existsSync(path.join(data, 'build-cache', owner.id)));
    const del = await api.delete(`/api/projects/${owner.id}`);
    assert.equal(del.status, 200, del.text);
    assert.ok(!existsSync(path.join(data, 'build-cache', owner.id)));
  });
});
