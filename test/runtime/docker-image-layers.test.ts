// @store-independent: a real Docker Engine and files, no database.
/**
 * Release images in layers ordered for reuse (contract section 21, issue 39 point 3): the generated
 * Dockerfile copies `node_modules` first, so a rebuild whose dependencies did not change reuses that layer
 * from the engine's BuildKit cache (the build output says `CACHED`), a build with `noCache` does not, and
 * the image holds the same files as one `COPY . /app`. Folders COPY could misread fall back to one COPY.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packingDockerfile } from '../../src/runtime/build-image.js';
import { DockerEngine } from '../../src/runtime/docker/engine.js';
import { DockerImageBuilder } from '../../src/runtime/docker/image-build.js';
import type { ImageBuildInput } from '../../src/runtime/driver.js';
import { tempDir } from '../support/harness.js';

const BASE_IMAGE = 'berth-base/node:20';
const engine = DockerEngine.fromEnv();
const noEngine = await engine.ping().then(
  () => null,
  (e: Error) => `no Docker Engine answers (${e.message})`,
);
const withEngine = { skip: noEngine ?? false };
const run = randomBytes(4).toString('hex');
const repo = `berth-test/image-layers-${run}`;
const builder = new DockerImageBuilder({ env: { PATH: process.env.PATH, DOCKER_HOST: process.env.DOCKER_HOST }, engine, instanceKey: 'test' });
const root = tempDir('berth-image-layers-');
const tags: string[] = [];

after(async () => {
  if (!noEngine) await builder.remove(tags).catch(() => {});
  rmSync(root, { recursive: true, force: true });
});

function folder(name: string, files: Record<string, string>): string {
  const d = path.join(root, name);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(d, rel)), { recursive: true });
    writeFileSync(path.join(d, rel), text);
  }
  return d;
}

/** Builds `dir` packed with its generated Dockerfile; answers the build's output lines. */
async function pack(dir: string, tag: string, noCache = false): Promise<string[]> {
  const lines: string[] = [];
  tags.push(tag);
  const input: ImageBuildInput = {
    contextDir: dir,
    dockerfileText: packingDockerfile(BASE_IMAGE, '1234:1235', dir),
    tag,
    buildArgs: {},
    secrets: {},
    labels: { 'berth.kind': 'build' },
    signal: new AbortController().signal,
    deadline: Date.now() + 120_000,
    ...(noCache ? { noCache: true } : {}),
    log: (_s, line) => lines.push(line),
  };
  await builder.build(input);
  return lines;
}

/** Whether the build output says the node_modules COPY step came from the cache. */
function nodeModulesCached(lines: string[]): boolean {
  const step = lines.find((l) => /COPY .*node_modules/.test(l))?.match(/^#(\d+) /)?.[1];
  return !!step && lines.includes(`#${step} CACHED`);
}

test('node_modules first, then each folder, then the files; links, odd names or no node_modules: one COPY', () => {
  const d = folder('plan', { 'node_modules/a/index.js': '1', 'src/i.js': '2', 'public/x.txt': '3', 'package.json': '{}', 'server.js': '4', '.git/HEAD': 'x' });
  assert.equal(
    packingDockerfile('b:1', '5:6', d),
    ['FROM b:1', 'COPY --chown=5:6 ["node_modules","/app/node_modules"]', 'COPY --chown=5:6 ["public","/app/public"]', 'COPY --chown=5:6 ["src","/app/src"]', 'COPY --chown=5:6 ["package.json","server.js","/app/"]', 'WORKDIR /app', 'USER 5:6', ''].join('\n'),
  );
  const whole = 'FROM b:1\nCOPY --chown=5:6 . /app\nWORKDIR /app\nUSER 5:6\n';
  assert.equal(packingDockerfile('b:1', '5:6', folder('nodeps', { 'src/i.js': '1', 'package.json': '{}' })), whole);
  const linked = folder('linked', { 'node_modules/a/index.js': '1' });
  symlinkSync('/etc', path.join(linked, 'etc'));
  assert.equal(packingDockerfile('b:1', '5:6', linked), whole);
  assert.equal(packingDockerfile('b:1', '5:6', folder('glob', { 'node_modules/a/index.js': '1', 'w*ld/x': '1' })), whole);
  assert.equal(packingDockerfile('b:1', '5:6', folder('dash', { 'node_modules/a/index.js': '1', '-rf/x': '1' })), whole);
  assert.throws(() => packingDockerfile('b:1\nRUN evil', '5:6', d), /not an image reference/);
});

test("a rebuild with the same dependencies reuses the node_modules layer; noCache does not; the image holds the whole folder as the project's", withEngine, async () => {
  const files = { 'node_modules/dep/index.js': `module.exports = '${run}';\n`, 'node_modules/.bin/.keep': '', 'src/app.js': 'v1\n', 'package.json': '{"name":"layers"}\n', '.git/HEAD': 'ref\n' };
  const first = folder('v1', files);
  await pack(first, `${repo}:v1`);
  // A new build folder: the same dependencies (copied, new times), a changed source file.
  const second = folder('v2', { ...files, 'src/app.js': 'v2\n' });
  rmSync(path.join(second, 'node_modules'), { recursive: true });
  cpSync(path.join(first, 'node_modules'), path.join(second, 'node_modules'), { recursive: true });
  const again = await pack(second, `${repo}:v2`);
  assert.ok(nodeModulesCached(again), again.join('\n'));
  const fresh = await pack(second, `${repo}:v3`, true);
  assert.ok(!nodeModulesCached(fresh), fresh.join('\n'));

  const c = await engine.api.createContainer({ Image: `${repo}:v2`, Cmd: ['sh', '-c', 'ls -a /app; cat /app/src/app.js; stat -c "%u:%g %n" /app/node_modules/dep/index.js /app/src/app.js /app/package.json'] });
  try {
    await c.start();
    await c.wait();
    const out = (await c.logs({ stdout: true, stderr: true })).toString('utf8');
    assert.match(out, /node_modules/);
    assert.match(out, /package\.json/);
    assert.doesNotMatch(out, /\.git\b/);
    assert.match(out, /v2/);
    assert.match(out, /1234:1235 \/app\/node_modules\/dep\/index\.js/);
    assert.match(out, /1234:1235 \/app\/src\/app\.js/);
    assert.match(out, /1234:1235 \/app\/package\.json/);
  } finally {
    await c.remove({ force: true });
  }
});
