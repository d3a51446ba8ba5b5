// @store-independent: a real Docker Engine and files, no database.
/**
 * Release images in layers ordered for reuse (contract section 21, issue 39 point 3): the generated
 * Dockerfile copies `node_modules` first, so a rebuild whose dependencies did not change reuses that layer
 * from the engine's BuildKit cache (the build output says `CACHED`), a build with `noCache` does not, and
 * the image holds the same files as one `COPY . /app`. Folders COPY could misread fall back to one COPY.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, lstatSync, mkdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packingDockerfile } from '../../src/runtime/build-image.js';
import { acquireContextAlias } from '../../src/runtime/docker/build-context.js';
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

/** Builds `dir` packed with its generated Dockerfile (through the link `alias`, when given); answers the build's output lines. */
async function pack(dir: string, tag: string, noCache = false, alias?: string): Promise<string[]> {
  const lines: string[] = [];
  tags.push(tag);
  const input: ImageBuildInput = {
    contextDir: dir,
    ...(alias ? { contextAlias: alias } : {}),
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

/** The bytes BuildKit received of the build context (its `transferring context: <n><unit> ... done` line). */
function contextBytes(lines: string[]): number {
  const m = lines.map((l) => /transferring context: ([\d.]+)(B|kB|MB|GB)\b.*done/.exec(l)).filter((x) => x).at(-1);
  assert.ok(m, lines.join('\n'));
  return Number(m[1]) * { B: 1, kB: 1e3, MB: 1e6, GB: 1e9 }[m[2] as 'B' | 'kB' | 'MB' | 'GB'];
}

test('through the same context link, a new build folder with the same dependencies sends only what changed; the image is the new folder', withEngine, async () => {
  const alias = path.join(root, `.context-${run}`);
  const big = randomBytes(4 * 1024 * 1024).toString('base64');
  const first = folder('alias-v1', { 'node_modules/dep/big.js': big, 'src/app.js': 'v1\n', 'package.json': '{"name":"alias"}\n' });
  const sent1 = contextBytes(await pack(first, `${repo}:alias1`, false, alias));
  // The next deployment's folder: the kept dependencies (copied with their times to the nanosecond, as a
  // reused install's are: coreutils' cp -a) and a changed file.
  const second = folder('alias-v2', { 'src/app.js': 'v2\n', 'package.json': '{"name":"alias"}\n' });
  execFileSync('cp', ['-a', '--', path.join(first, 'node_modules'), path.join(second, 'node_modules')]);
  const again = await pack(second, `${repo}:alias2`, false, alias);
  const sent2 = contextBytes(again);
  assert.ok(sent1 > 4_000_000, `the first build sends the whole context (${sent1} B)`);
  assert.ok(sent2 < 1_000_000, `the second sends what changed, not node_modules (${sent2} B)\n${again.join('\n')}`);
  assert.equal(lstatSync(alias, { throwIfNoEntry: false }), undefined, 'the link goes with the build');
  const c = await engine.api.createContainer({ Image: `${repo}:alias2`, Cmd: ['sh', '-c', 'cat /app/src/app.js; wc -c < /app/node_modules/dep/big.js'] });
  try {
    await c.start();
    await c.wait();
    const out = (await c.logs({ stdout: true, stderr: true })).toString('utf8');
    assert.match(out, /v2/);
    assert.match(out, new RegExp(`\\b${big.length}\\b`));
  } finally {
    await c.remove({ force: true });
  }
});

test('a context link is used by one build at a time; a folder at its path is left alone and the real folder is given', () => {
  const inUse = new Set<string>();
  const alias = path.join(root, `.context-once-${run}`);
  const a = folder('once-a', { 'x.txt': 'a' });
  const b = folder('once-b', { 'x.txt': 'b' });
  const first = acquireContextAlias(alias, a, inUse);
  assert.equal(first.path, alias);
  assert.equal(readlinkSync(alias), a);
  const second = acquireContextAlias(alias, b, inUse);
  assert.equal(second.path, b, 'a build meanwhile gets its own folder');
  assert.equal(readlinkSync(alias), a, "and never moves the link another build reads through");
  second.release();
  first.release();
  assert.equal(lstatSync(alias, { throwIfNoEntry: false }), undefined);
  mkdirSync(alias);
  const third = acquireContextAlias(alias, b, inUse);
  assert.equal(third.path, b);
  assert.ok(lstatSync(alias).isDirectory(), 'a folder there is not replaced');
  third.release();
  assert.ok(lstatSync(alias).isDirectory());
  assert.equal(acquireContextAlias(undefined, b, inUse).path, b);
});
