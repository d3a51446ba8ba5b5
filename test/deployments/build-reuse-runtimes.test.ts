// @store-independent: what it checks is the runtime's (sandbox, files, real installs), the same on either store.
/**
 * Reused installs beyond Node.js (contract section 21, issue 39 point 2), on the sandbox runtime through the
 * API, with real installs of local packages (no package index is reachable here): a Python virtual
 * environment from a requirements.txt naming a wheel, Ruby gems from a Gemfile.lock with a `path:` gem, and
 * a Composer vendor folder from a `path` repository. The second build of an unchanged lockfile reuses the
 * first's install (said in the log with the deployment, the install command not run), a changed lockfile
 * installs again, and another project's build cannot see the kept copy.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '60';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { findProgram } from '../../src/runtime/toolchains.js';
import { createUser } from '../support/factories.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { waitForDeployment } from '../support/wait.js';

function write(dir: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const lacking = (...programs: string[]): string | undefined => {
  const missing = programs.filter((p) => !findProgram(p, process.env.PATH ?? ''));
  return missing.length ? `needs ${missing.join(', ')} (.ci/run installs them)` : undefined;
};

/** A pure-Python wheel of `localpkg` at `version`, written into `dir` by Python's own zipfile (no index needed to install it). */
function writeWheel(dir: string, version: string): string {
  const script = [
    'import base64, hashlib, sys, zipfile',
    'd, v = sys.argv[1], sys.argv[2]',
    "files = {'localpkg/__init__.py': f\"VERSION = '{v}'\\n\", f'localpkg-{v}.dist-info/METADATA': f'Metadata-Version: 2.1\\nName: localpkg\\nVersion: {v}\\n', f'localpkg-{v}.dist-info/WHEEL': 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}",
    "rec = ''.join(f\"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b'=').decode()},{len(t)}\\n\" for n, t in files.items()) + f'localpkg-{v}.dist-info/RECORD,,\\n'",
    "z = zipfile.ZipFile(f'{d}/localpkg-{v}-py3-none-any.whl', 'w')",
    'for n, t in files.items(): z.writestr(n, t)',
    "z.writestr(f'localpkg-{v}.dist-info/RECORD', rec)",
    'z.close()',
  ].join('\n');
  mkdirSync(dir, { recursive: true });
  execFileSync('python3', ['-c', script, dir, version]);
  return `localpkg-${version}-py3-none-any.whl`;
}

const HTTP_PY = (body: string) =>
  `import os\nfrom http.server import BaseHTTPRequestHandler, HTTPServer\n${body}\nclass H(BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200)\n        self.end_headers()\n        self.wfile.write(TEXT.encode())\nHTTPServer(('0.0.0.0', int(os.environ.get('PORT', '8000'))), H).serve_forever()\n`;

describe('reused installs of Python, Ruby and PHP (sandbox runtime, real installs of local packages)', () => {
  let root: string;
  let data: string;
  let server: TestServer;
  let api: HttpClient;
  let pg: { url: string; drop(): Promise<void> } | undefined;

  before(async () => {
    root = tempDir('berth-reuse-rt-');
    data = path.join(root, 'data');
    mkdirSync(path.join(root, 'local'), { recursive: true });
    if (usingPostgres()) pg = await freshPostgresDatabase();
    server = await startTestServer({ background: true, dataDir: data, databaseUrl: pg?.url, flags: { runtime: 'sandbox' }, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_BUILD_CACHE_MB: '512' } });
    await getRuntime(server.ctx).restored;
    api = server.api((await createUser(server)).token);
  });
  after(async () => {
    await server?.close();
    await pg?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const edge = (slug: string) => edgeRequest(getRuntime(server.ctx).edgePort(), `${slug}.localhost`, '/');
  const keptOf = (projectId: string) => path.join(data, 'build-cache', projectId, '.installed', 'production');

  async function importApp(name: string): Promise<{ id: string; slug: string }> {
    const res = await api.post('/api/projects/import', { path: path.join(root, 'local', name), name });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  }

  async function deploy(projectId: string): Promise<{ d: any; lines: string[]; log: string }> {
    const started = await api.post('/api/deployments', { projectId, environment: 'production' });
    assert.equal(started.status, 202, started.text);
    const d = await waitForDeployment(api, started.body.data.id, 300_000);
    const lines: string[] = (await api.get(`/api/deployments/${d.id}/logs?limit=2000`)).body.data.map((l: { line: string }) => l.line);
    const log = lines.join('\n');
    assert.equal(d.status, 'ready', `${d.error}\n${log}`);
    return { d, lines, log };
  }

  const reusedLine = (from: string, install: string, then = '') => `[berth] install: reused the dependencies the last build (${from}) installed (lockfile, install command and runtime unchanged): ${install} skipped${then}`;

  test("python: the second build with the same requirements.txt reuses the first's .venv; a changed one installs; another project cannot see the kept copy", { skip: lacking('python3') }, async () => {
    const dir = path.join(root, 'local', 'py-app');
    const wheel = writeWheel(dir, '1.0');
    write(dir, { 'requirements.txt': `./${wheel}\n`, 'main.py': HTTP_PY("import localpkg\nTEXT = 'localpkg ' + localpkg.VERSION") });
    const project = await importApp('py-app');
    const install = 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt';

    const first = await deploy(project.id);
    assert.ok(first.lines.includes('[berth] install: not reused: no install kept yet'), first.log);
    assert.ok(first.lines.includes(`[berth] install: ${install}`), first.log);
    assert.match(first.log, /^\[berth\] cache: installed dependencies kept for the next build \(\d+\.\d MB\)$/m);
    assert.ok(existsSync(path.join(keptOf(project.id), '.venv', 'bin', 'python')));
    assert.notEqual(statSync(path.join(keptOf(project.id), '.venv')).uid, 0, "the kept copy is the project's uid's");

    // A source change that leaves requirements.txt alone: the install is not run, the app runs on the kept .venv.
    write(dir, { 'main.py': HTTP_PY("import localpkg\nTEXT = 'second localpkg ' + localpkg.VERSION") });
    const second = await deploy(project.id);
    assert.ok(second.lines.includes(reusedLine(first.d.id, install)), second.log);
    assert.ok(!second.lines.includes(`[berth] install: ${install}`) && !second.log.includes('Successfully installed'), second.log);
    assert.equal((await edge(project.slug)).text, 'second localpkg 1.0');

    // Another project's build step looks for the kept copy: it is not there to read.
    const other = path.join(root, 'local', 'py-other');
    const target = path.join(keptOf(project.id), '.venv', 'bin', 'python');
    write(other, {
      'package.json': JSON.stringify({ name: 'py-other', private: true, scripts: { build: 'node probe.js', start: 'node probe.js serve' } }),
      'probe.js': `const fs = require('node:fs');\nif (process.argv[2] === 'serve') require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT));\nelse { try { fs.statSync(${JSON.stringify(target)}); console.log('probe: kept venv visible'); } catch (e) { console.log('probe: kept venv ' + e.code); } }\n`,
    });
    const probe = await deploy((await importApp('py-other')).id);
    assert.match(probe.log, /^probe: kept venv (ENOENT|EACCES)$/m);

    // A new version of the local package, named by the requirements: installed as usual.
    const wheel2 = writeWheel(dir, '1.1');
    write(dir, { 'requirements.txt': `./${wheel2}\n` });
    const third = await deploy(project.id);
    assert.ok(third.lines.includes(`[berth] install: not reused: the lockfile, install command or runtime changed since ${first.d.id}'s install`), third.log);
    assert.ok(third.lines.includes(`[berth] install: ${install}`), third.log);
    assert.equal((await edge(project.slug)).text, 'second localpkg 1.1');
  });

  test("ruby: the second build with the same Gemfile.lock reuses vendor/bundle and .bundle; a changed one installs", { skip: lacking('ruby', 'bundle') }, async () => {
    const dir = path.join(root, 'local', 'rb-app');
    const gem = (version: string) => ({
      'gems/localgem/localgem.gemspec': `Gem::Specification.new do |s|\n  s.name = 'localgem'\n  s.version = '${version}'\n  s.summary = 'x'\n  s.authors = ['x']\n  s.files = ['lib/localgem.rb']\nend\n`,
      'gems/localgem/lib/localgem.rb': `module Localgem\n  VERSION = '${version}'\nend\n`,
      'Gemfile.lock': `PATH\n  remote: gems/localgem\n  specs:\n    localgem (${version})\n\nGEM\n  specs:\n\nPLATFORMS\n  ruby\n\nDEPENDENCIES\n  localgem!\n`,
    });
    const app = (text: string) => `require 'socket'\nrequire 'localgem'\nserver = TCPServer.new('0.0.0.0', Integer(ENV.fetch('PORT', '3000')))\nloop do\n  c = server.accept\n  while (line = c.gets) && line != "\\r\\n"; end\n  body = "${text} #{Localgem::VERSION}"\n  c.write("HTTP/1.1 200 OK\\r\\nContent-Length: #{body.bytesize}\\r\\nConnection: close\\r\\n\\r\\n#{body}")\n  c.close\nend\n`;
    write(dir, { Gemfile: "gem 'localgem', path: './gems/localgem'\n", ...gem('1.0.0'), 'app.rb': app('first'), Procfile: 'web: bundle exec ruby app.rb\n' });
    const project = await importApp('rb-app');
    const install = 'bundle config set --local path vendor/bundle && bundle install';

    const first = await deploy(project.id);
    assert.ok(first.lines.includes(`[berth] install: ${install}`), first.log);
    assert.ok(existsSync(path.join(keptOf(project.id), 'vendor', 'bundle')) && existsSync(path.join(keptOf(project.id), '.bundle', 'config')), first.log);

    write(dir, { 'app.rb': app('second') });
    const second = await deploy(project.id);
    assert.ok(second.lines.includes(reusedLine(first.d.id, install)), second.log);
    assert.ok(!second.lines.includes(`[berth] install: ${install}`) && !second.log.includes('Bundle complete'), second.log);
    // bundle exec finds the gem through the reused .bundle/config.
    assert.equal((await edge(project.slug)).text, 'second 1.0.0');

    write(dir, gem('1.1.0'));
    const third = await deploy(project.id);
    assert.ok(third.lines.includes(`[berth] install: not reused: the lockfile, install command or runtime changed since ${first.d.id}'s install`), third.log);
    assert.ok(third.lines.includes(`[berth] install: ${install}`), third.log);
    assert.equal((await edge(project.slug)).text, 'second 1.1.0');
  });

  test('php: the second build with the same composer.lock reuses vendor (the autoloader is dumped again); a changed one installs', { skip: lacking('php', 'composer') }, async () => {
    const dir = path.join(root, 'local', 'php-app');
    const pkg = (version: string) => ({
      'packages/greet/composer.json': JSON.stringify({ name: 'acme/greet', version, autoload: { 'psr-4': { 'Acme\\Greet\\': 'src/' } } }),
      'packages/greet/src/Hello.php': `<?php\nnamespace Acme\\Greet;\nclass Hello { const V = '${version}'; }\n`,
      'composer.json': JSON.stringify({ repositories: [{ type: 'path', url: './packages/greet' }, { 'packagist.org': false }], require: { 'acme/greet': version } }),
    });
    /** composer.lock, written by Composer itself (no index: the path repository only). */
    const lock = () => execFileSync('composer', ['update', '--no-install', '--no-interaction', '--quiet'], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: path.join(root, 'composer-home'), COMPOSER_ALLOW_SUPERUSER: '1' } });
    write(dir, { ...pkg('1.0.0'), 'index.php': "<?php require __DIR__ . '/vendor/autoload.php'; echo 'first ' . Acme\\Greet\\Hello::V;\n" });
    lock();
    const project = await importApp('php-app');
    const install = 'composer install --no-dev --optimize-autoloader --no-interaction';

    const first = await deploy(project.id);
    assert.ok(first.lines.includes(`[berth] install: ${install}`), first.log);
    assert.ok(existsSync(path.join(keptOf(project.id), 'vendor', 'autoload.php')), first.log);

    write(dir, { 'index.php': "<?php require __DIR__ . '/vendor/autoload.php'; echo 'second ' . Acme\\Greet\\Hello::V;\n" });
    const second = await deploy(project.id);
    const then = 'composer dump-autoload --no-interaction --no-dev --optimize';
    assert.ok(second.lines.includes(reusedLine(first.d.id, install, `; then ${then}`)), second.log);
    assert.ok(!second.lines.includes(`[berth] install: ${install}`) && second.lines.includes(`[berth] install: ${then}`), second.log);
    assert.ok(!second.log.includes('Package operations'), second.log);
    assert.equal((await edge(project.slug)).text, 'second 1.0.0');

    write(dir, pkg('1.1.0'));
    lock();
    const third = await deploy(project.id);
    assert.ok(third.lines.includes(`[berth] install: not reused: the lockfile, install command or runtime changed since ${first.d.id}'s install`), third.log);
    assert.ok(third.lines.includes(`[berth] install: ${install}`), third.log);
    assert.equal((await edge(project.slug)).text, 'second 1.1.0');
  });
});
