// @store-independent: what it checks is the runtime's (sandbox, network, files), the same on either store.
/**
 * Every runtime this machine has, deployed end to end as a new user would: a small app folder
 * written for the test, imported from a local folder (`POST /api/projects/import`, which scans it),
 * deployed with the detected plan, and answering through the edge. Static sites are served by the
 * edge itself, with no process. A runtime the host lacks fails at once, naming the program.
 *
 * Runtimes whose toolchain is missing here are skipped with the reason printed; `.ci/run` installs
 * them all (golang-go, ruby, ruby-bundler, php-cli, cargo, python3-venv), so CI runs every one.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '30';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { createUser } from '../support/factories.js';
import type { HttpClient } from '../support/http.js';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { findProgram } from '../../src/runtime/toolchains.js';
import { waitForDeployment } from '../support/wait.js';

let root: string;
let pg: { url: string; drop(): Promise<void> } | undefined;
let server: TestServer;
let api: HttpClient;

const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Why a runtime cannot be tested here, or null (the programs a sandboxed build can see). */
function lacking(...programs: string[]): string | null {
  const missing = programs.filter((p) => !findProgram(p, SYSTEM_PATH));
  return missing.length ? `this machine lacks ${missing.join(', ')} (.ci/run installs it)` : null;
}

function write(dir: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

/** A request to the edge with a given Host header. */
function edge(host: string, pathName = '/', headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; text: string; headers: http.IncomingHttpHeaders }> {
  const port = getRuntime(server.ctx).edgePort();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: pathName, headers: { host, ...headers }, timeout: 20000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, body, text: body.toString(), headers: res.headers });
      });
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('edge request timed out')));
    req.end();
  });
}

/** Imports a folder of the local root, deploys it and waits for the end of the deployment. */
async function importAndDeploy(name: string, timeoutMs = 180_000, configure?: (project: any) => Promise<void>): Promise<{ project: any; deployment: any; scan: any }> {
  const dir = path.join(root, 'local', name);
  const scan = await api.post('/api/projects/scan', { path: dir });
  assert.equal(scan.status, 200, scan.text);
  const imported = await api.post('/api/projects/import', { path: dir, name });
  assert.equal(imported.status, 201, imported.text);
  const project = imported.body.data;
  await configure?.(project);
  const res = await api.post('/api/deployments', { projectId: project.id });
  assert.equal(res.status, 202, res.text);
  const deployment = await waitForDeployment(api, res.body.data.id, timeoutMs);
  return { project, deployment, scan: scan.body.data };
}

async function buildLog(deploymentId: string): Promise<string> {
  const logs = await api.get(`/api/deployments/${deploymentId}/logs`);
  return JSON.stringify(logs.body);
}

/** Deploys and expects the app to answer `expected` at / through the edge. */
async function expectServes(name: string, expected: RegExp, timeoutMs?: number, configure?: (project: any) => Promise<void>): Promise<any> {
  const { project, deployment, scan } = await importAndDeploy(name, timeoutMs, configure);
  assert.equal(deployment.status, 'ready', `${name}: ${deployment.error}\n${await buildLog(deployment.id)}`);
  const res = await edge(`${project.slug}.localhost`);
  assert.equal(res.status, 200, res.text);
  assert.match(res.text, expected);
  return { project, deployment, scan };
}

before(async () => {
  root = tempDir('berth-runtimes-');
  mkdirSync(path.join(root, 'local'), { recursive: true });
  if (usingPostgres()) pg = await freshPostgresDatabase();
  server = await startTestServer({
    background: true,
    dataDir: path.join(root, 'data'),
    databaseUrl: pg?.url,
    env: { BERTH_SECRET_KEY: randomBytes(32).toString('base64'), BERTH_LOCAL_ROOTS: path.join(root, 'local'), BERTH_EDGE_PORT: '0' },
  });
  await getRuntime(server.ctx).restored;
  api = server.api((await createUser(server)).token);
});

after(async () => {
  await server?.close();
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

describe('static sites are served by the edge itself', () => {
  test('a plain index.html folder deploys as a static site: no process, its 404.html for a missing file, gzip and brotli', async () => {
    const big = '<p>' + 'static content '.repeat(200) + '</p>';
    write(path.join(root, 'local', 'plain-site'), { 'index.html': `<!doctype html><h1>plain static site</h1>${big}`, '404.html': '<h1>custom not found</h1>', 'css/site.css': 'body { color: red }' });
    const { project, deployment, scan } = await expectServes('plain-site', /plain static site/);
    assert.equal(scan.runtime, 'static');
    assert.deepEqual(scan.plan.static, { outputDirectory: '.', spa: false });
    assert.equal(getRuntime(server.ctx).supervisor.snapshot(project.id), null, 'a static site runs no process');
    const info = await api.get(`/api/projects/${project.id}/info`);
    assert.equal(info.body.data.runtime.state, 'static');
    const host = `${project.slug}.localhost`;
    const missing = await edge(host, '/nope');
    assert.equal(missing.status, 404);
    assert.match(missing.text, /custom not found/);
    const br = await edge(host, '/', { 'accept-encoding': 'br' });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.match(zlib.brotliDecompressSync(br.body).toString(), /plain static site/);
    const gz = await edge(host, '/', { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.match(zlib.gunzipSync(gz.body).toString(), /plain static site/);
    assert.equal((await edge(host, '/css/site.css')).text, 'body { color: red }');
    // Request logs apply as for apps.
    const recent = await api.get(`/api/projects/${project.id}/server-logs/recent`);
    assert.ok(recent.body.data.some((e: any) => e.path === '/nope' && e.status === 404), JSON.stringify(recent.body));
    assert.match(await buildLog(deployment.id), /static site/);
  });

  test('a site built into dist by its package.json is served from config.static.outputDirectory; spa answers index.html for deep links', async () => {
    write(path.join(root, 'local', 'built-site'), {
      'package.json': JSON.stringify({ name: 'built-site', private: true, scripts: { build: 'node build.mjs' } }),
      'index.html': '<h1>source page (not served)</h1>',
      'build.mjs':
        "import { mkdirSync, writeFileSync } from 'node:fs';\nmkdirSync('dist/assets', { recursive: true });\nwriteFileSync('dist/index.html', '<h1>built spa shell</h1><script src=/assets/app-3f9a1b2c.js></script>');\nwriteFileSync('dist/assets/app-3f9a1b2c.js', 'console.log(1)');\n",
    });
    const { project, scan } = await expectServes('built-site', /built spa shell/, undefined, async (p) => {
      const set = await api.patch(`/api/projects/${p.id}`, { static: { outputDirectory: 'dist' } });
      assert.equal(set.status, 200, set.text);
    });
    assert.equal(scan.runtime, 'node');
    assert.deepEqual(scan.plan.build, ['npm run build']);
    const host = `${project.slug}.localhost`;
    const asset = await edge(host, '/assets/app-3f9a1b2c.js');
    assert.equal(asset.status, 200);
    assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal((await edge(host, '/')).headers['cache-control'], 'no-cache');
    assert.equal((await edge(host, '/package.json')).status, 404, 'only the output directory is published');
    assert.equal((await edge(host, '/dashboard/settings')).status, 404);
    const patch = await api.patch(`/api/projects/${project.id}`, { static: { spa: true } });
    assert.equal(patch.status, 200, patch.text);
    assert.deepEqual(patch.body.data.config.static, { outputDirectory: 'dist', spa: true, cleanUrls: false });
    let deep = await edge(host, '/dashboard/settings');
    for (let i = 0; i < 20 && deep.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      deep = await edge(host, '/dashboard/settings');
    }
    assert.equal(deep.status, 200, 'the edge applies config.static within a second, without a redeploy');
    assert.match(deep.text, /built spa shell/);
  });

  test('a Vite React app is built with its own dependencies and served as a single-page app', { skip: lacking('npm') ?? undefined }, async () => {
    write(path.join(root, 'local', 'vite-react'), {
      'package.json': JSON.stringify({
        name: 'vite-react',
        private: true,
        type: 'module',
        scripts: { dev: 'vite', build: 'vite build', preview: 'vite preview' },
        dependencies: { react: '^18.3.1', 'react-dom': '^18.3.1' },
        devDependencies: { vite: '^6.0.0' },
      }),
      'index.html': '<!doctype html><html><body><div id="root"></div><script type="module" src="/src/main.js"></script></body></html>',
      'src/main.js':
        "import { createElement } from 'react';\nimport { createRoot } from 'react-dom/client';\ncreateRoot(document.getElementById('root')).render(createElement('h1', null, 'hello from vite react'));\n",
    });
    const { project, scan } = await expectServes('vite-react', /<div id="root"><\/div>/, 300_000);
    assert.equal(scan.framework, 'vite');
    assert.deepEqual(scan.plan.static, { outputDirectory: 'dist', spa: true });
    const host = `${project.slug}.localhost`;
    const page = await edge(host, '/');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
    assert.ok(script, page.text);
    const js = await edge(host, script!);
    assert.equal(js.status, 200);
    assert.match(js.text, /hello from vite react/);
    assert.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
    const deep = await edge(host, '/settings/profile');
    assert.equal(deep.status, 200, 'a Vite app is a single-page app by default');
    assert.match(deep.text, /<div id="root">/);
  });
});

describe('server runtimes deploy with the detected plan and answer through the edge', () => {
  test('node with pnpm through corepack (pinned by packageManager)', { skip: lacking('node', 'corepack') ?? undefined }, async () => {
    write(path.join(root, 'local', 'node-pnpm'), {
      'package.json': JSON.stringify({ name: 'node-pnpm', private: true, packageManager: 'pnpm@9.12.0', scripts: { start: 'node server.js' } }),
      'server.js': "require('http').createServer((q, s) => s.end('hello from pnpm ' + process.version)).listen(process.env.PORT);\n",
    });
    const { scan, deployment } = await expectServes('node-pnpm', /hello from pnpm v\d+/);
    assert.equal(scan.packageManager, 'pnpm');
    assert.match(await buildLog(deployment.id), /pnpm 9\.12\.0/);
  });

  test("a folder's railpack.json sets the start command and variables the app runs with", async () => {
    write(path.join(root, 'local', 'railpack-app'), {
      'package.json': JSON.stringify({ name: 'railpack-app', private: true, scripts: { start: 'node other.js' } }),
      'server.js': "require('http').createServer((q, s) => s.end('greeting: ' + process.env.GREETING)).listen(process.env.PORT);\n",
      'railpack.json': JSON.stringify({ deploy: { startCommand: 'node server.js', variables: { GREETING: 'from railpack.json' } } }),
    });
    const { scan } = await expectServes('railpack-app', /greeting: from railpack\.json/);
    assert.equal(scan.plan.start, 'node server.js');
    assert.deepEqual(scan.plan.variables, { GREETING: 'from railpack.json' });
  });

  test('bun from the npm registry, when the app runs with bun', { skip: lacking('npm') ?? undefined }, async () => {
    write(path.join(root, 'local', 'bun-app'), {
      'package.json': JSON.stringify({ name: 'bun-app', private: true, scripts: { start: 'bun server.ts' } }),
      'server.ts': "Bun.serve({ port: Number(process.env.PORT), fetch: () => new Response('hello from bun ' + Bun.version) });\n",
    });
    const { scan } = await expectServes('bun-app', /hello from bun \d/);
    assert.equal(scan.runtime, 'bun');
  });

  test('deno from the npm registry', { skip: lacking('npm') ?? undefined }, async () => {
    write(path.join(root, 'local', 'deno-app'), {
      'deno.json': JSON.stringify({ tasks: {} }),
      'main.ts': "Deno.serve({ port: Number(Deno.env.get('PORT')), hostname: '0.0.0.0' }, () => new Response('hello from deno ' + Deno.version.deno));\n",
    });
    const { scan } = await expectServes('deno-app', /hello from deno \d/);
    assert.equal(scan.runtime, 'deno');
  });

  test('python: a lone main.py with a requirements.txt, in a virtual environment', { skip: lacking('python3') ?? undefined }, async () => {
    write(path.join(root, 'local', 'python-app'), {
      'requirements.txt': '',
      'main.py':
        "import os\nfrom http.server import BaseHTTPRequestHandler, HTTPServer\nclass H(BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200)\n        self.end_headers()\n        self.wfile.write(b'hello from python')\nHTTPServer(('0.0.0.0', int(os.environ.get('PORT', '8000'))), H).serve_forever()\n",
    });
    const { scan } = await expectServes('python-app', /hello from python/);
    assert.equal(scan.runtime, 'python');
  });

  test('go: a module built into one binary', { skip: lacking('go') ?? undefined }, async () => {
    write(path.join(root, 'local', 'go-app'), {
      'go.mod': 'module example.com/goapp\n\ngo 1.19\n',
      'main.go':
        'package main\n\nimport (\n\t"net/http"\n\t"os"\n)\n\nfunc main() {\n\thttp.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello from go")) })\n\thttp.ListenAndServe(":"+os.Getenv("PORT"), nil)\n}\n',
    });
    const { scan } = await expectServes('go-app', /hello from go/);
    assert.equal(scan.runtime, 'go');
  });

  test('ruby: a Gemfile app run through bundler', { skip: lacking('ruby', 'bundle') ?? undefined }, async () => {
    write(path.join(root, 'local', 'ruby-app'), {
      Gemfile: "source 'https://rubygems.org'\n",
      'Gemfile.lock': 'GEM\n  remote: https://rubygems.org/\n  specs:\n\nPLATFORMS\n  ruby\n\nDEPENDENCIES\n\nBUNDLED WITH\n   2.3.27\n',
      'app.rb':
        "require 'socket'\nserver = TCPServer.new('0.0.0.0', Integer(ENV.fetch('PORT', '3000')))\nloop do\n  c = server.accept\n  while (line = c.gets) && line != \"\\r\\n\"; end\n  body = 'hello from ruby'\n  c.write(\"HTTP/1.1 200 OK\\r\\nContent-Length: #{body.bytesize}\\r\\nConnection: close\\r\\n\\r\\n#{body}\")\n  c.close\nend\n",
      Procfile: 'web: bundle exec ruby app.rb\n',
    });
    const { scan } = await expectServes('ruby-app', /hello from ruby/);
    assert.equal(scan.runtime, 'ruby');
  });

  test('php: an index.php served by the PHP built-in server on $PORT', { skip: lacking('php') ?? undefined }, async () => {
    write(path.join(root, 'local', 'php-app'), { 'index.php': "<?php echo 'hello from php ' . PHP_MAJOR_VERSION;\n" });
    const { scan } = await expectServes('php-app', /hello from php \d/);
    assert.equal(scan.runtime, 'php');
  });

  test('rust: a cargo package built in release mode', { skip: (existsSync('/usr/bin/cargo') ? null : 'this machine lacks /usr/bin/cargo (.ci/run installs it)') ?? undefined }, async () => {
    write(path.join(root, 'local', 'rust-app'), {
      'Cargo.toml': '[package]\nname = "rustapp"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
      'src/main.rs':
        'use std::io::{Read, Write};\nuse std::net::TcpListener;\n\nfn main() {\n    let port = std::env::var("PORT").unwrap_or_else(|_| "8080".into());\n    let listener = TcpListener::bind(format!("0.0.0.0:{}", port)).unwrap();\n    for stream in listener.incoming() {\n        let mut s = stream.unwrap();\n        let mut buf = [0u8; 1024];\n        let _ = s.read(&mut buf);\n        let body = "hello from rust";\n        let _ = write!(s, "HTTP/1.1 200 OK\\r\\nContent-Length: {}\\r\\nConnection: close\\r\\n\\r\\n{}", body.len(), body);\n    }\n}\n',
    });
    const { scan } = await expectServes('rust-app', /hello from rust/, 300_000);
    assert.equal(scan.runtime, 'rust');
  });
});

describe('what cannot be built fails at once, saying why', () => {
  test('a runtime whose toolchain the host lacks names the runtime and the missing program', { skip: findProgram('mix', SYSTEM_PATH) ? 'this machine has mix' : undefined }, async () => {
    write(path.join(root, 'local', 'elixir-app'), { 'mix.exs': 'defmodule App.MixProject do\n  use Mix.Project\n  def project, do: [app: :app, version: "0.1.0"]\nend\n' });
    const { deployment } = await importAndDeploy('elixir-app');
    assert.equal(deployment.status, 'failed');
    assert.match(deployment.error, /the elixir runtime needs the program "(mix|elixir)", which this host does not have/);
    assert.doesNotMatch(deployment.error, /package\.json/);
  });

  test('a start command pinned to another port than $PORT fails the build with that reason', async () => {
    write(path.join(root, 'local', 'fixed-port'), {
      'package.json': JSON.stringify({ name: 'fixed-port', private: true }),
      'server.js': "require('http').createServer((q, s) => s.end('x')).listen(4200);\n",
    });
    const { deployment } = await importAndDeploy('fixed-port', undefined, async (p) => {
      assert.equal((await api.patch(`/api/projects/${p.id}`, { startCommand: 'node server.js --port 4200', port: 3000 })).status, 200);
    });
    assert.equal(deployment.status, 'failed');
    assert.match(deployment.error, /listens on port 4200, but the app must listen on \$PORT \(3000\)/);
  });

  test('a Dockerfile project says it needs the docker runtime', async () => {
    write(path.join(root, 'local', 'docker-app'), { Dockerfile: 'FROM scratch\nEXPOSE 8080\n' });
    const { deployment } = await importAndDeploy('docker-app');
    assert.equal(deployment.status, 'failed');
    assert.match(deployment.error, /Dockerfile, which needs the docker runtime/);
  });

  test('an unknown folder says what Berth looked for', async () => {
    write(path.join(root, 'local', 'notes'), { 'notes.txt': 'hello' });
    const { deployment } = await importAndDeploy('notes');
    assert.equal(deployment.status, 'failed');
    assert.match(deployment.error, /could not tell how to build this folder/);
  });
});
