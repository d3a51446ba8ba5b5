// @store-independent: the runtime's build folders on their images, the same on either store.
/**
 * A build's folders under build.diskMb (docs/runtime.md "Disk limits"), through runBuild on real
 * loop-mounted images: an upload's source is copied to the plain folder and moved onto the image only
 * before the first step of the project's, so a build that runs none makes no image; a step still writes
 * against the limit; a source larger than the limit fails the build naming it. Needs root and loop devices.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BuildError, runBuild, type PlanInput } from '../../src/runtime/build.js';
import { imagesUsable, isMounted, unmountBelow } from '../../src/runtime/disk-image.js';
import { createDriver } from '../../src/runtime/drivers.js';
import { tempDir } from '../support/harness.js';

let root: string;
let skip: string | false = false;
let seq = 0;
before(async () => {
  root = tempDir('berth-build-disk-');
  const u = await imagesUsable(root);
  if (!u.ok) skip = `filesystem images are not usable here: ${u.reason}`;
});
after(async () => {
  await unmountBelow(root);
  rmSync(root, { recursive: true, force: true });
});

function upload(files: Record<string, string | Buffer>): string {
  const dir = path.join(root, `upload-${++seq}`);
  mkdirSync(dir, { recursive: true });
  for (const [name, data] of Object.entries(files)) writeFileSync(path.join(dir, name), data);
  return dir;
}

async function build(dir: string, plan: Partial<PlanInput>, seen: { planMounted?: boolean }) {
  const lines: string[] = [];
  const workDir = path.join(root, 'builds', `dpl_disk${++seq}`);
  mkdirSync(path.dirname(workDir), { recursive: true });
  const run = runBuild({
    deploymentId: `dpl_disk${seq}`,
    projectId: 'prj_disk',
    workDir,
    source: { type: 'upload', dir },
    commands: {},
    plan: () => {
      seen.planMounted = isMounted(workDir);
      return { runtime: 'node', install: [], build: [], start: 'node server.js', programs: ['node'], ...plan };
    },
    port: 3000,
    env: {},
    secrets: [],
    baseEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    timeoutMs: 120000,
    limits: { cpuCores: 1, memoryMb: 1024 },
    diskMb: 32,
    driver: createDriver('process', path.join(root, 'data')),
    identity: null,
    signal: new AbortController().signal,
    log: (_stream, line) => lines.push(line),
  });
  return { run, lines, workDir };
}

test("an upload's build that runs no step of the project's makes no image, and its release is a plain folder", async (t) => {
  if (skip) return t.skip(skip);
  const seen: { planMounted?: boolean } = {};
  const { run, workDir } = await build(upload({ 'server.js': 'console.log(1)\n' }), {}, seen);
  const result = await run;
  assert.equal(seen.planMounted, false);
  assert.equal(isMounted(workDir), false);
  assert.equal(existsSync(`${workDir}.img`), false);
  assert.ok(existsSync(path.join(result.appRoot, 'server.js')));
});

test("an upload's build step writes against build.diskMb: past it the build fails naming the limit, and no image is left", async (t) => {
  if (skip) return t.skip(skip);
  const fill = "const fs = require('node:fs'); const b = Buffer.alloc(1024 * 1024, 1); const fd = fs.openSync('junk', 'w'); for (let i = 0; i < 64; i++) fs.writeSync(fd, b);";
  const seen: { planMounted?: boolean } = {};
  const { run, lines, workDir } = await build(upload({ 'server.js': '', 'fill.js': fill }), { build: ['node fill.js'] }, seen);
  await assert.rejects(run, (e: Error) => e instanceof BuildError && /build\.diskMb/.test(e.message));
  assert.equal(seen.planMounted, false, 'the plan read the plain folder');
  assert.ok(lines.some((l) => /\[berth\] the build's folders are full: .* of the 32 MB build\.diskMb allows/.test(l)), lines.join('\n'));
  assert.equal(isMounted(workDir), false);
  assert.equal(existsSync(`${workDir}.img`), false);
});

test('an upload whose source alone is larger than build.diskMb fails before its first step, naming the limit', async (t) => {
  if (skip) return t.skip(skip);
  const { run, workDir } = await build(upload({ 'server.js': '', 'big.bin': Buffer.alloc(48 * 1024 * 1024, 1) }), { build: ['node -e 0'] }, {});
  await assert.rejects(run, (e: Error) => e instanceof BuildError && /the source alone does not fit the 32 MB build\.diskMb/.test(e.message));
  assert.equal(isMounted(workDir), false);
  assert.equal(existsSync(`${workDir}.img`), false);
});
