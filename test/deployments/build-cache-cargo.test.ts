// @store-independent: what it checks is the runtime's (sandbox, files, the build cache), the same on either store.
/**
 * Cargo's `target` in the project's build cache (contract section 21, issue 39 point 1: "Cargo (registry
 * and target)"), on the sandbox runtime through the API: a Rust app's first build leaves its compiled
 * output in the environment's cache (said in the log with its size), its release holds the binary as a
 * file of its own, and the next build starts from what was compiled (Cargo compiles nothing it compiled
 * before; the log says what was restored).
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '60';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { createUser } from '../support/factories.js';
import { edgeRequest, type HttpClient } from '../support/http.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';
import { waitForDeployment } from '../support/wait.js';

const CARGO = existsSync('/usr/bin/cargo');

const MAIN_RS =
  'use std::io::{Read, Write};\nuse std::net::TcpListener;\n\nfn main() {\n    let port = std::env::var("PORT").unwrap_or_else(|_| "8080".into());\n    let listener = TcpListener::bind(format!("0.0.0.0:{}", port)).unwrap();\n    for stream in listener.incoming() {\n        let mut s = stream.unwrap();\n        let mut buf = [0u8; 1024];\n        let _ = s.read(&mut buf);\n        let body = greeting::text();\n        let _ = write!(s, "HTTP/1.1 200 OK\\r\\nContent-Length: {}\\r\\nConnection: close\\r\\n\\r\\n{}", body.len(), body);\n    }\n}\n';

describe('Cargo target in the build cache (sandbox runtime)', { skip: CARGO ? undefined : 'this machine lacks /usr/bin/cargo (.ci/run installs it)' }, () => {
  let root: string;
  let data: string;
  let server: TestServer;
  let api: HttpClient;

  before(async () => {
    root = tempDir('berth-cargocache-');
    data = path.join(root, 'data');
    mkdirSync(path.join(root, 'local'), { recursive: true });
    server = await startTestServer({ background: true, dataDir: data, flags: { runtime: 'sandbox' }, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local') } });
    await getRuntime(server.ctx).restored;
    api = server.api((await createUser(server)).token);
  });
  after(async () => {
    await server?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  async function deploy(projectId: string): Promise<{ d: any; lines: string[]; log: string }> {
    const started = await api.post('/api/deployments', { projectId });
    assert.equal(started.status, 202, started.text);
    const d = await waitForDeployment(api, started.body.data.id, 600_000);
    const lines: string[] = (await api.get(`/api/deployments/${d.id}/logs?limit=2000`)).body.data.map((l: { line: string }) => l.line);
    const log = lines.join('\n');
    assert.equal(d.status, 'ready', `${d.error}\n${log}`);
    return { d, lines, log };
  }

  test("a Rust app's compiled crates stay in its cache: the next build compiles only what changed, and each release holds its binary as its own file", async () => {
    // The app and a crate it depends on from a registry: no registry is reachable here, so a vendored
    // source stands for crates.io (Cargo treats it as one: its crates are compiled once per version, not
    // again for new file times, as a fresh copy of the source has).
    const dir = path.join(root, 'local', 'rusty');
    const files: Record<string, string> = {
      'Cargo.toml': '[package]\nname = "rusty"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ngreeting = "0.1.0"\n',
      'src/main.rs': MAIN_RS,
      '.cargo/config.toml': '[source.crates-io]\nreplace-with = "vendored-sources"\n\n[source.vendored-sources]\ndirectory = "vendor"\n',
      'vendor/greeting/Cargo.toml': '[package]\nname = "greeting"\nversion = "0.1.0"\nedition = "2021"\n',
      'vendor/greeting/src/lib.rs': 'pub fn text() -> &\'static str { "hello from the cache" }\n',
      'vendor/greeting/.cargo-checksum.json': '{"files":{},"package":null}\n',
    };
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), text);
    }
    const created = await api.post('/api/projects/import', { path: dir, name: 'rusty' });
    assert.equal(created.status, 201, created.text);
    const project = created.body.data;
    const first = await deploy(project.id);
    assert.match(first.log, /Compiling greeting v0\.1\.0/);
    assert.match(first.log, /^\[berth\] cache: cargo-target \d+(\.\d+)? MB saved$/m);
    const cache = path.join(data, 'build-cache', project.id, 'production', 'cargo-target');
    assert.ok(lstatSync(path.join(cache, 'release', '.fingerprint')).isDirectory());
    const edge = () => edgeRequest(getRuntime(server.ctx).edgePort(), `${project.slug}.localhost`, '/');
    assert.equal((await edge()).text, 'hello from the cache');
    const releaseOf = async (id: string) => (await server.ctx.db.selectFrom('deploymentBuilds').select('releaseDir').where('deploymentId', '=', id).executeTakeFirstOrThrow()).releaseDir!;
    const bin = lstatSync(path.join(await releaseOf(first.d.id), 'target', 'release', 'rusty'));
    assert.ok(bin.isFile() && (bin.mode & 0o100) !== 0, 'the release holds the binary as an executable file');
    assert.ok(!lstatSync(path.join(await releaseOf(first.d.id), 'target')).isSymbolicLink());
    assert.ok(!existsSync(path.join(await releaseOf(first.d.id), 'target', 'release', 'deps')), 'the compiled dependencies stay in the cache');

    // A change of the app's own source: the dependency is not compiled again.
    writeFileSync(path.join(dir, 'src', 'main.rs'), MAIN_RS.replace('let body = greeting::text();', 'let body = format!("{}!", greeting::text());'));
    const second = await deploy(project.id);
    assert.match(second.log, /^\[berth\] cache: cargo-target \d+(\.\d+)? MB restored$/m);
    assert.match(second.log, /Compiling rusty v0\.1\.0/);
    assert.doesNotMatch(second.log, /Compiling greeting/, second.log);
    assert.equal((await edge()).text, 'hello from the cache!');
    // The first release's binary is its own: the second build did not change it.
    assert.ok(lstatSync(path.join(await releaseOf(first.d.id), 'target', 'release', 'rusty')).isFile());
  });
});
