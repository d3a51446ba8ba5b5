// Contract section 18: the server never blocks on, follows or trusts a tenant's file. The reader of
// src/lib/tenant-file.ts on real files, FIFOs and links (no mocks of the file system).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readTenantFile, readTenantFileSync, TENANT_FILE_MAX_BYTES, type TenantReadOptions } from '../../src/lib/tenant-file.js';
import { startSteps } from '../../src/runtime/app-commands.js';
import { planBuild } from '../../src/modules/detect/index.js';
import { tempDir } from '../support/harness.js';

let root: string;
let outside: string;

before(() => {
  root = tempDir('berth-tenant-file-');
  outside = tempDir('berth-tenant-outside-');
  writeFileSync(path.join(outside, 'secret.json'), '{"secret":true}');
  writeFileSync(path.join(root, 'package.json'), '{"scripts":{"start":"node server.js"}}');
  mkdirSync(path.join(root, 'apps', 'web'), { recursive: true });
  writeFileSync(path.join(root, 'apps', 'web', 'package.json'), '{"name":"web"}');
  execFileSync('mkfifo', [path.join(root, 'fifo.json')]);
  symlinkSync('/dev/zero', path.join(root, 'zero.json'));
  symlinkSync(path.join(outside, 'secret.json'), path.join(root, 'outside.json'));
  symlinkSync('package.json', path.join(root, 'inside-link.json'));
  symlinkSync(outside, path.join(root, 'linked-dir'));
  writeFileSync(path.join(root, 'huge.json'), Buffer.alloc(2 * 1024 * 1024, 0x20));
  writeFileSync(path.join(root, 'limit.json'), Buffer.alloc(TENANT_FILE_MAX_BYTES, 0x20));
});

after(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

/** Both readers, which must agree. */
async function both(rel: string, opts?: TenantReadOptions) {
  const a = await readTenantFile(root, rel, opts);
  const s = readTenantFileSync(root, rel, opts);
  assert.deepEqual(s, a, `the synchronous read of ${rel} agrees`);
  return a;
}

describe('reading a tenant file', () => {
  it('reads a regular file below the root, also in a sub-folder', async () => {
    assert.deepEqual(await both('package.json'), { text: '{"scripts":{"start":"node server.js"}}', problem: null });
    assert.deepEqual(await both('apps/web/package.json'), { text: '{"name":"web"}', problem: null });
  });

  it('answers missing for a file that is not there', async () => {
    assert.deepEqual(await both('nope.json'), { text: null, problem: 'missing' });
    assert.deepEqual(await both('package.json/x'), { text: null, problem: 'missing' });
  });

  it('ignores a FIFO without waiting for a writer', async () => {
    assert.deepEqual(await both('fifo.json'), { text: null, problem: 'not a regular file' });
  });

  it('never follows a link: to a device, out of the root, or even inside it', async () => {
    assert.deepEqual(await both('zero.json'), { text: null, problem: 'a link' });
    assert.deepEqual(await both('outside.json'), { text: null, problem: 'a link' });
    assert.deepEqual(await both('inside-link.json'), { text: null, problem: 'a link' });
  });

  it('never follows a folder on the way that is a link (src -> elsewhere)', async () => {
    assert.deepEqual(await both('linked-dir/secret.json'), { text: null, problem: 'a link' });
  });

  it('refuses a path that climbs out of the root', async () => {
    assert.deepEqual(await both(`../${path.basename(outside)}/secret.json`), { text: null, problem: 'outside the source' });
    assert.deepEqual(await both(path.join(outside, 'secret.json')), { text: null, problem: 'outside the source' });
  });

  it('refuses a file over 1 MiB, and reads one of exactly 1 MiB', async () => {
    assert.deepEqual(await both('huge.json'), { text: null, problem: 'too large' });
    assert.equal((await both('limit.json')).text?.length, TENANT_FILE_MAX_BYTES);
  });

  it('reads the head of a large file, or the whole of one up to a larger bound, when asked', async () => {
    assert.equal((await both('huge.json', { head: 16 })).text, ' '.repeat(16));
    assert.equal((await both('huge.json', { max: 4 * 1024 * 1024 })).text?.length, 2 * 1024 * 1024);
    assert.deepEqual(await both('fifo.json', { head: 16 }), { text: null, problem: 'not a regular file' });
  });
});

describe('the start steps of a package manager start', () => {
  it('run the start script of a regular package.json directly', async () => {
    assert.deepEqual(await startSteps(root, 'npm start', {}), [{ argv: ['node', 'server.js'], env: {} }]);
  });

  it('fall back to the package manager when package.json is a FIFO, a link or too large, saying so', async () => {
    for (const [file, why] of [
      ['fifo.json', 'not a regular file'],
      ['zero.json', 'a link'],
      ['huge.json', 'too large'],
    ] as const) {
      const app = path.join(root, `app-${file}`);
      mkdirSync(app);
      execFileSync('mv', [path.join(root, file), path.join(app, 'package.json')]);
      const lines: string[] = [];
      assert.deepEqual(await startSteps(app, 'npm start', {}, (l) => lines.push(l), root), [{ argv: ['npm', 'start'], env: {} }], file);
      assert.deepEqual(lines, [`ignored package.json: ${why}`], file);
    }
  });

  it('do not read package.json through an app folder that is a link', async () => {
    const lines: string[] = [];
    symlinkSync(path.join(root, 'apps', 'web'), path.join(root, 'web-link'));
    writeFileSync(path.join(root, 'apps', 'web', 'package.json'), '{"scripts":{"start":"node web.js"}}');
    assert.deepEqual(await startSteps(path.join(root, 'web-link'), 'npm start', {}, (l) => lines.push(l), root), [{ argv: ['npm', 'start'], env: {} }]);
    assert.deepEqual(lines, ['ignored package.json: a link']);
  });
});

describe('detection of a source with hostile files', () => {
  it('reads none of them, and names each one it found but ignored', () => {
    const src = path.join(root, 'detect-src');
    mkdirSync(path.join(src, 'web'), { recursive: true });
    execFileSync('mkfifo', [path.join(src, 'web', 'package.json')]);
    symlinkSync('/etc/passwd', path.join(src, 'web', 'Procfile'));
    writeFileSync(path.join(src, 'web', 'requirements.txt'), Buffer.alloc(2 * 1024 * 1024, 0x61));
    symlinkSync('/dev/zero', path.join(src, 'package.json'));
    const ignored: string[] = [];
    const plan = planBuild(src, path.join(src, 'web'), (rel, why) => ignored.push(`${rel}: ${why}`));
    assert.notEqual(plan.runtime, 'node', 'no package.json was read');
    assert.equal(plan.start, null, 'no Procfile was read');
    for (const line of ['web/package.json: not a regular file', 'web/Procfile: a link', 'web/requirements.txt: too large', 'package.json: a link']) {
      assert.ok(ignored.includes(line), `${line} in ${JSON.stringify(ignored)}`);
    }
    assert.equal(new Set(ignored).size, ignored.length, 'each file is named once');
  });
});
