// @store-independent: what it checks is the runtime's (sandbox, files), the same on either store.
/**
 * Next.js's own build cache (`.next/cache`) kept with the project's build cache (contract section 21 in
 * spirit, issue 39): on the sandbox runtime through the API, an app that depends on `next` (a stand-in
 * package from its own source, so no registry is needed) finds in `.next/cache` what its project's last
 * build wrote there, another project's build finds nothing, the cache is said in the log with its size,
 * and the release holds no `.next/cache`; its builds get the Server Actions key kept in that cache (the
 * same build after build: Next.js's webpack cache is versioned by it), another project's another.
 */
process.env.BERTH_HEALTH_TIMEOUT_SECONDS = '60';
process.env.BERTH_STOP_GRACE_SECONDS = '2';

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getRuntime } from '../../src/modules/hosting/index.js';
import { createUser } from '../support/factories.js';
import type { HttpClient } from '../support/http.js';
import { freshPostgresDatabase, startTestServer, tempDir, usingPostgres, type TestServer } from '../support/harness.js';
import { waitForDeployment } from '../support/wait.js';

/** The build step: says what `.next/cache` held, then writes its own marker there and a build output beside it. */
const PROBE = `const fs = require('node:fs');
const seen = fs.existsSync('.next/cache/webpack/marker') ? fs.readFileSync('.next/cache/webpack/marker', 'utf8') : 'nothing';
console.log('probe: cache held ' + seen + ', link ' + fs.readlinkSync('.next/cache'));
console.log('probe: key ' + (process.env.NEXT_SERVER_ACTIONS_ENCRYPTION_KEY ?? 'none'));
fs.mkdirSync('.next/cache/webpack', { recursive: true });
fs.writeFileSync('.next/cache/webpack/marker', process.env.MARK + ' ' + fs.readFileSync('version.txt', 'utf8').trim());
fs.writeFileSync('.next/BUILD_ID', 'b');
`;

describe("Next.js's build cache kept with the project's (sandbox runtime)", () => {
  let root: string;
  let data: string;
  let server: TestServer;
  let api: HttpClient;
  let pg: { url: string; drop(): Promise<void> } | undefined;

  before(async () => {
    root = tempDir('berth-nextcache-');
    data = path.join(root, 'data');
    mkdirSync(path.join(root, 'local'), { recursive: true });
    if (usingPostgres()) pg = await freshPostgresDatabase();
    server = await startTestServer({ background: true, dataDir: data, databaseUrl: pg?.url, flags: { runtime: 'sandbox' }, env: { BERTH_LOCAL_ROOTS: path.join(root, 'local') } });
    await getRuntime(server.ctx).restored;
    api = server.api((await createUser(server)).token);
  });
  after(async () => {
    await server?.close();
    await pg?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  async function importApp(name: string, mark: string): Promise<{ id: string; dir: string }> {
    const dir = path.join(root, 'local', name);
    const files: Record<string, string> = {
      'package.json': JSON.stringify({ name, version: '1.0.0', private: true, scripts: { build: `MARK=${mark} node probe.js`, start: 'node server.js' }, dependencies: { next: 'file:./next-stand-in' } }),
      'next-stand-in/package.json': JSON.stringify({ name: 'next', version: '0.0.0' }),
      'probe.js': PROBE,
      'version.txt': 'v1',
      'server.js': "require('node:http').createServer((req, res) => res.end('ok')).listen(Number(process.env.PORT));\n",
    };
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      writeFileSync(path.join(dir, rel), text);
    }
    const res = await api.post('/api/projects/import', { path: dir, name });
    assert.equal(res.status, 201, res.text);
    return { id: res.body.data.id, dir };
  }

  async function deploy(projectId: string): Promise<{ id: string; lines: string[]; log: string }> {
    const started = await api.post('/api/deployments', { projectId });
    assert.equal(started.status, 202, started.text);
    const d = await waitForDeployment(api, started.body.data.id, 300_000);
    const lines: string[] = (await api.get(`/api/deployments/${d.id}/logs?limit=2000`)).body.data.map((l: { line: string }) => l.line);
    const log = lines.join('\n');
    assert.equal(d.status, 'ready', `${d.error}\n${log}`);
    return { id: d.id, lines, log };
  }

  /** The Server Actions key the build step saw. */
const keyOf = (lines: string[]) => lines.find((l) => l.startsWith('probe: key '))?.slice('probe: key '.length);

test("a project's next build finds what its last build left in .next/cache and the same Server Actions key; another project's finds nothing and another key; the release holds no .next/cache", async () => {
    const a = await importApp('next-a', 'a');
    const first = await deploy(a.id);
    assert.ok(first.lines.includes('probe: cache held nothing, link /cache/next'), first.log);
    assert.match(first.log, /^\[berth\] cache: next \d+(\.\d+)? MB saved$/m);
    const kept = path.join(data, 'build-cache', a.id, 'production', 'next');
    assert.equal(readFileSync(path.join(kept, 'webpack', 'marker'), 'utf8'), 'a v1');
    assert.notEqual(statSync(kept).uid, 0, "the cache is the project's uid's");

    writeFileSync(path.join(a.dir, 'version.txt'), 'v2');
    const second = await deploy(a.id);
    assert.match(second.log, /^\[berth\] cache: next \d+(\.\d+)? MB restored$/m);
    assert.ok(second.lines.includes('probe: cache held a v1, link /cache/next'), second.log);
    assert.match(keyOf(first.lines) ?? '', /^[A-Za-z0-9+/]{43}=$/, first.log);
    assert.equal(keyOf(second.lines), keyOf(first.lines), 'the same key build after build');
    assert.equal(JSON.parse(readFileSync(path.join(kept, '.rscinfo'), 'utf8'))['encryption.key'], keyOf(first.lines), "kept in the cache's next folder, as Next.js keeps it");
    const release = (await server.ctx.db.selectFrom('deploymentBuilds').select('releaseDir').where('deploymentId', '=', second.id).executeTakeFirstOrThrow()).releaseDir!;
    assert.ok(existsSync(path.join(release, '.next', 'BUILD_ID')), 'the build output is the release');
    assert.equal(lstatSync(path.join(release, '.next', 'cache'), { throwIfNoEntry: false }), undefined, 'the release has no .next/cache');

    const b = await importApp('next-b', 'b');
    const other = await deploy(b.id);
    assert.ok(other.lines.includes('probe: cache held nothing, link /cache/next'), other.log);
    assert.notEqual(keyOf(other.lines), keyOf(first.lines), 'another project has a key of its own');
    assert.equal(readFileSync(path.join(kept, 'webpack', 'marker'), 'utf8'), 'a v2', "another project's build never wrote project a's cache");
  });
});
