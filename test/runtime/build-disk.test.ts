// @store-independent: the runtime's build folders on their images, the same on either store.
/**
 * A build's folders under build.diskMb (docs/runtime.md "Disk limits"), through runBuild on real
 * loop-mounted images: an upload's source is copied to the plain folder and moved onto the image only
 * before the first step of the project's, so a build that runs none makes no image; a step still writes
 * against the limit; a source larger than the limit fails the build naming it. Needs root and loop devices.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BuildError, runBuild, type PlanInput } from '../../src/runtime/build.js';
import { imagesUsable, isMounted, unmountBelow } from '../../src/runtime/disk-image.js';
import { keepRelease, limitBuildFolders } from '../../src/runtime/build-disk.js';
import { restoreInstall } from '../../src/runtime/build-reuse.js';
import { startDiskLimits } from '../../src/runtime/disk-limits.js';
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

test("a kept install mounted into a build's folder is read through and never written, leaves with the release, and no mount or snapshot outlives the build or a stop", async (t) => {
  if (skip) return t.skip(skip);
  const kept = path.join(root, 'data', 'build-cache', 'prj_ov', '.installed', 'production');
  mkdirSync(path.join(kept, 'node_modules', 'pkg'), { recursive: true });
  writeFileSync(path.join(kept, 'node_modules', 'pkg', 'index.js'), 'installed');
  const folder = async (name: string) => {
    const workDir = path.join(root, 'data', 'builds', 'prj_ov', name);
    mkdirSync(path.dirname(workDir), { recursive: true });
    assert.ok(await limitBuildFolders(workDir, 32));
    mkdirSync(path.join(workDir, 'src'));
    assert.equal(await restoreInstall(kept, path.join(workDir, 'src'), null, workDir), 'mounted');
    return workDir;
  };
  const workDir = await folder('dpl_ov1');
  const file = path.join(workDir, 'src', 'node_modules', 'pkg', 'index.js');
  assert.equal(readFileSync(file, 'utf8'), 'installed');
  writeFileSync(file, 'built');
  writeFileSync(path.join(workDir, 'src', 'node_modules', 'new.js'), 'new');
  assert.equal(readFileSync(path.join(kept, 'node_modules', 'pkg', 'index.js'), 'utf8'), 'installed', 'the kept copy is not written');
  assert.ok(!existsSync(path.join(kept, 'node_modules', 'new.js')));
  await keepRelease(workDir);
  assert.equal(readFileSync(file, 'utf8'), 'built', 'the release holds what the build made');
  assert.ok(existsSync(path.join(workDir, 'src', 'node_modules', 'new.js')));
  assert.ok(!isMounted(workDir) && !isMounted(path.join(workDir, 'src', 'node_modules')));
  assert.ok(!existsSync(`${workDir}.lower`), 'the snapshot went with the build');

  // A stop in the middle of a build: the next start unmounts both and removes the image and the snapshot.
  const cut = await folder('dpl_ov2');
  assert.ok(existsSync(`${cut}.lower`));
  await startDiskLimits(path.join(root, 'data'), 'auto', { warn() {} });
  assert.ok(!isMounted(cut) && !isMounted(path.join(cut, 'src', 'node_modules')));
  assert.ok(!existsSync(`${cut}.lower`) && !existsSync(`${cut}.img`));
  assert.equal(readFileSync(path.join(kept, 'node_modules', 'pkg', 'index.js'), 'utf8'), 'installed');
});

test("a release's node_modules are links to the kept install plus what its build changed, and a later build never changes a running release's files", async (t) => {
  if (skip) return t.skip(skip);
  const kept = path.join(root, 'data', 'build-cache', 'prj_ln', '.installed', 'production');
  const nm = path.join(kept, 'node_modules');
  for (const d of ['pkg/sub', 'olddir', 'asfile']) mkdirSync(path.join(nm, d), { recursive: true });
  for (const [f, text] of Object.entries({ 'pkg/index.js': 'installed', 'pkg/same.js': 'same', 'pkg/gone.js': 'gone', 'pkg/sub/a.js': 'a', 'olddir/x.js': 'x', 'asfile/f': 'f', 'tool.js': 'tool' })) writeFileSync(path.join(nm, f), text);
  symlinkSync('pkg/index.js', path.join(nm, 'link.js'));
  const build = async (name: string, steps: (nodeModules: string) => void) => {
    const workDir = path.join(root, 'data', 'builds', 'prj_ln', name);
    mkdirSync(path.dirname(workDir), { recursive: true });
    assert.ok(await limitBuildFolders(workDir, 32));
    mkdirSync(path.join(workDir, 'src'));
    writeFileSync(path.join(workDir, 'src', 'server.js'), 'app');
    assert.equal(await restoreInstall(kept, path.join(workDir, 'src'), null, workDir), 'mounted');
    steps(path.join(workDir, 'src', 'node_modules'));
    await keepRelease(workDir);
    return path.join(workDir, 'src', 'node_modules');
  };
  // The first build changes a file, adds one, removes one, makes a folder anew, turns a folder into a file and a mode.
  const rel1 = await build('dpl_ln1', (m) => {
    writeFileSync(path.join(m, 'pkg', 'index.js'), 'built');
    writeFileSync(path.join(m, 'pkg', 'sub', 'new.js'), 'new');
    rmSync(path.join(m, 'pkg', 'gone.js'));
    rmSync(path.join(m, 'olddir'), { recursive: true });
    mkdirSync(path.join(m, 'olddir'));
    writeFileSync(path.join(m, 'olddir', 'y.js'), 'y');
    rmSync(path.join(m, 'asfile'), { recursive: true });
    writeFileSync(path.join(m, 'asfile'), 'now a file');
    chmodSync(path.join(m, 'tool.js'), 0o755);
  });
  const tree = (dir: string): Record<string, string> => {
    const out: Record<string, string> = {};
    const walk = (rel: string) => {
      for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
        const r = path.join(rel, e.name);
        const p = path.join(dir, r);
        if (e.isDirectory()) walk(r);
        else out[r] = e.isSymbolicLink() ? `-> ${readlinkSync(p)}` : `${readFileSync(p, 'utf8')} ${(lstatSync(p).mode & 0o777).toString(8)}`;
      }
    };
    walk('');
    return out;
  };
  const expected = {
    'asfile': 'now a file 644', 'link.js': '-> pkg/index.js', 'olddir/y.js': 'y 644', 'pkg/index.js': 'built 644', 'pkg/same.js': 'same 644',
    'pkg/sub/a.js': 'a 644', 'pkg/sub/new.js': 'new 644', 'tool.js': 'tool 755',
  };
  assert.deepEqual(tree(rel1), expected, 'the release holds what the build saw');
  assert.equal(readFileSync(path.join(rel1, '..', 'server.js'), 'utf8'), 'app');
  assert.ok(!isMounted(path.join(rel1, '..', '..')) && !existsSync(`${path.dirname(path.dirname(rel1))}.lower`));
  // Unchanged files are the kept install's own (links, no data copied); changed ones are the release's.
  assert.equal(lstatSync(path.join(rel1, 'pkg', 'same.js')).ino, lstatSync(path.join(nm, 'pkg', 'same.js')).ino);
  assert.notEqual(lstatSync(path.join(rel1, 'pkg', 'index.js')).ino, lstatSync(path.join(nm, 'pkg', 'index.js')).ino);
  assert.notEqual(lstatSync(path.join(rel1, 'tool.js')).ino, lstatSync(path.join(nm, 'tool.js')).ino, 'a changed mode is not made on the kept file');
  assert.deepEqual(tree(nm), { 'asfile/f': 'f 644', 'link.js': '-> pkg/index.js', 'olddir/x.js': 'x 644', 'pkg/gone.js': 'gone 644', 'pkg/index.js': 'installed 644', 'pkg/same.js': 'same 644', 'pkg/sub/a.js': 'a 644', 'tool.js': 'tool 644' }, 'the kept install is as its install made it');

  // A later build writes into, appends to, changes the mode of and removes the files the first release links.
  const rel2 = await build('dpl_ln2', (m) => {
    writeFileSync(path.join(m, 'pkg', 'same.js'), 'changed by a later build');
    appendFileSync(path.join(m, 'pkg', 'sub', 'a.js'), ' and more');
    chmodSync(path.join(m, 'link.js'), 0o600);
    rmSync(path.join(m, 'olddir'), { recursive: true });
  });
  assert.equal(readFileSync(path.join(rel2, 'pkg', 'same.js'), 'utf8'), 'changed by a later build');
  assert.equal(readFileSync(path.join(rel2, 'pkg', 'sub', 'a.js'), 'utf8'), 'a and more');
  assert.deepEqual(tree(rel1), expected, 'the running release is unchanged by the later build');
  // The kept install replaced (a changed lockfile) and then removed (the cache's cap): the release keeps its files.
  rmSync(kept, { recursive: true });
  assert.deepEqual(tree(rel1), expected, 'the release does not depend on the kept install');
});
