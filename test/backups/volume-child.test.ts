/**
 * A volume is archived and extracted by a process of its own (src/modules/backups/volume-child.ts,
 * started by volume-process.ts): the same folder comes out (contents, modes, symbolic links, times),
 * whether the server pipes the artifact in or the child reads the artifact's file itself; a damaged
 * artifact or a failing source fails the extraction with its own error; an abort kills the child and
 * leaves no process behind; a killed child fails the archive stream.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { extractInChild, packIntoFile, volumeSource } from '../../src/modules/backups/volume-process.js';
import { waitFor } from '../support/wait.js';
import { childrenWith } from './helpers.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'berth-volume-child-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A volume with a few files (one of several MiB, incompressible), modes, a link and set times; and its artifact's bytes. */
async function volumeAndArtifact(name: string): Promise<{ dir: string; artifact: Buffer }> {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, 'sub', 'deeper'), { recursive: true });
  writeFileSync(path.join(dir, 'a.txt'), 'hello\n');
  writeFileSync(path.join(dir, 'run.sh'), '#!/bin/sh\necho hi\n');
  chmodSync(path.join(dir, 'run.sh'), 0o755);
  writeFileSync(path.join(dir, 'secret.txt'), 'only me\n');
  chmodSync(path.join(dir, 'secret.txt'), 0o600);
  chmodSync(path.join(dir, 'sub', 'deeper'), 0o750);
  writeFileSync(path.join(dir, 'sub', 'big.bin'), randomBytes(6 * 1024 * 1024));
  writeFileSync(path.join(dir, 'sub', 'deeper', 'text.txt'), 'line\n'.repeat(200_000));
  symlinkSync('sub/deeper/text.txt', path.join(dir, 'link-to-text'));
  symlinkSync('nowhere/at/all', path.join(dir, 'dangling'));
  // The app's own links, resolved in its view of the filesystem: absolute, and out of the folder.
  symlinkSync('/data/releases/5', path.join(dir, 'current'));
  symlinkSync('../../shared/config', path.join(dir, 'sub', 'deeper', 'config'));
  const when = new Date('2024-03-04T05:06:07Z');
  utimesSync(path.join(dir, 'a.txt'), when, when);
  utimesSync(path.join(dir, 'sub', 'big.bin'), when, when);
  return { dir, artifact: await buffer(volumeSource(dir)) };
}

/** Every entry of a tree: its kind, mode, modification time (seconds), and contents or link target. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of readdirSync(dir, { recursive: true }).map(String).sort()) {
    const p = path.join(dir, n);
    const st = lstatSync(p);
    const kind = st.isSymbolicLink() ? `link ${readlinkSync(p)}` : st.isDirectory() ? 'dir' : `file ${readFileSync(p).toString('base64').length}`;
    // A link's own times are not kept by tar (nor by `tar xzf`); its target is.
    const time = st.isSymbolicLink() || st.isDirectory() ? '' : ` ${Math.floor(st.mtimeMs / 1000)}`;
    out[n] = `${kind} ${(st.mode & 0o7777).toString(8)}${time}`;
  }
  return out;
}

/** The artifact as a storage would stream it: chunks of `size` bytes. */
function streamOf(bytes: Buffer, size = 256 * 1024): Readable {
  return Readable.from((function* () {
    for (let i = 0; i < bytes.length; i += size) yield Buffer.from(bytes.subarray(i, i + size));
  })());
}


test('an artifact archived and extracted by child processes gives back the folder: contents, modes, links and times', async () => {
  const { dir, artifact } = await volumeAndArtifact('whole');
  const out = path.join(root, 'whole-out');
  const heard: number[] = [];
  const got = await extractInChild({ stream: streamOf(artifact) }, out, { onProgress: (b) => heard.push(b) });
  assert.deepEqual(tree(out), tree(dir));
  assert.deepEqual(readFileSync(path.join(out, 'sub', 'big.bin')), readFileSync(path.join(dir, 'sub', 'big.bin')));
  assert.equal(got.bytes, artifact.length);
  assert.deepEqual(childrenWith('volume-child'), []);
});

test('the child reads an artifact file the server opened (its fd as stdin) and reports the bytes it read', async () => {
  const { dir, artifact } = await volumeAndArtifact('from-file');
  const file = path.join(root, 'from-file.tar.gz');
  writeFileSync(file, artifact);
  const fh = await open(file, 'r');
  const heard: number[] = [];
  try {
    const got = await extractInChild({ fd: fh.fd }, path.join(root, 'from-file-out'), { onProgress: (b) => heard.push(b) });
    assert.equal(got.bytes, artifact.length);
  } finally {
    await fh.close();
  }
  assert.deepEqual(tree(path.join(root, 'from-file-out')), tree(dir));
  assert.equal(heard.at(-1), artifact.length);
});

test('the archiving child writes into a file the server opened and reports the sha256 and size of what it wrote', async () => {
  const { dir, artifact } = await volumeAndArtifact('into-file');
  const file = path.join(root, 'into-file.tar.gz');
  const fh = await open(file, 'w');
  const heard: number[] = [];
  let got;
  try {
    got = await packIntoFile(dir, fh.fd, { onProgress: (b) => heard.push(b) });
  } finally {
    await fh.close();
  }
  const written = readFileSync(file);
  assert.equal(got.sizeBytes, written.length);
  assert.equal(got.sha256, createHash('sha256').update(written).digest('hex'));
  assert.equal(heard.at(-1), written.length);
  // The same tar as the piped one (blocked gzip is deterministic for the same folder).
  assert.equal(written.length, artifact.length);
  await extractInChild({ stream: streamOf(written) }, path.join(root, 'into-file-out'));
  assert.deepEqual(tree(path.join(root, 'into-file-out')), tree(dir));
  // The archiving's own error, with its code, as it was in the server's process.
  const other = await open(path.join(root, 'never.tar.gz'), 'w');
  try {
    await assert.rejects(packIntoFile(path.join(root, 'no-such-folder'), other.fd), { code: 'ENOENT' });
  } finally {
    await other.close();
  }
  assert.deepEqual(childrenWith('volume-child'), []);
});

test('an artifact whose entry lies beneath one of its links fails, and nothing is written through the link', async () => {
  // What `tar c` of a real folder never makes: `escape -> <outside>` and then `escape/planted`.
  const outside = path.join(root, 'outside');
  mkdirSync(outside);
  const crafted = path.join(root, 'crafted');
  mkdirSync(path.join(crafted, 'escape'), { recursive: true });
  writeFileSync(path.join(crafted, 'escape', 'planted'), 'x\n');
  const tar = await import('tar');
  const withDir = await buffer(tar.c({ cwd: crafted, gzip: true, portable: true }, ['escape/planted']) as unknown as Readable);
  rmSync(path.join(crafted, 'escape'), { recursive: true });
  symlinkSync(outside, path.join(crafted, 'escape'));
  const link = await buffer(tar.c({ cwd: crafted, gzip: true, portable: true }, ['escape']) as unknown as Readable);
  const gunzip = (await import('node:zlib')).gunzipSync;
  // The link first, then the file beneath it, as one archive (each tar's two end blocks dropped).
  const body = (b: Buffer) => { const t = gunzip(b); return t.subarray(0, t.length - 1024); };
  const artifact = (await import('node:zlib')).gzipSync(Buffer.concat([body(link), body(withDir), Buffer.alloc(1024)]));
  await assert.rejects(extractInChild({ stream: streamOf(artifact) }, path.join(root, 'crafted-out')), /EEXIST|not inside a folder/);
  assert.deepEqual(readdirSync(outside), []);
  assert.deepEqual(childrenWith('volume-child'), []);
});

test('a damaged artifact fails the extraction with the unpacker\'s error', async () => {
  const { artifact } = await volumeAndArtifact('damaged');
  const cut = artifact.subarray(0, Math.floor(artifact.length / 2));
  await assert.rejects(extractInChild({ stream: streamOf(cut) }, path.join(root, 'damaged-out')), /unexpected end of file|TAR_BAD_ARCHIVE|TAR_ABORT/i);
  // Not gzip at all, and longer than what a pipe holds: the unpacker's error, not the closed pipe's.
  const garbage = randomBytes(3_000_000);
  await assert.rejects(extractInChild({ stream: streamOf(garbage) }, path.join(root, 'garbage-out')), (e: NodeJS.ErrnoException) => e.code !== 'EPIPE' && /header|gzip|magic|zlib/i.test(e.message));
  assert.deepEqual(childrenWith('volume-child'), []);
});

test('a source that fails fails the extraction with the source\'s error, and the child is gone', async () => {
  const { artifact } = await volumeAndArtifact('source-fails');
  const src = new PassThrough();
  src.write(artifact.subarray(0, 1024 * 1024));
  const run = extractInChild({ stream: src }, path.join(root, 'source-fails-out'));
  await waitFor(() => childrenWith('source-fails-out').length > 0 || null, 'the child to start');
  src.destroy(new Error('the storage went away'));
  await assert.rejects(run, /the storage went away/);
  assert.deepEqual(childrenWith('volume-child'), []);
});

test('an abort kills the extracting child, answers an AbortError once it has exited, and leaves no process behind', async () => {
  const { artifact } = await volumeAndArtifact('aborted');
  const src = new PassThrough();
  src.write(artifact.subarray(0, 2 * 1024 * 1024));
  const abort = new AbortController();
  const run = extractInChild({ stream: src }, path.join(root, 'aborted-out'), { signal: abort.signal });
  await waitFor(() => childrenWith('aborted-out').length > 0 || null, 'the child to start');
  abort.abort();
  await assert.rejects(run, { name: 'AbortError' });
  assert.deepEqual(childrenWith('volume-child'), []);
  assert.ok(src.destroyed, 'the source stops being read');
  await assert.rejects(extractInChild({ stream: streamOf(artifact) }, path.join(root, 'never'), { signal: AbortSignal.abort() }), { name: 'AbortError' });
});

test('a killed archiving child fails the archive stream in Berth\'s words, with its stderr kept for the log', async () => {
  const dir = path.join(root, 'killed');
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < 8; i++) writeFileSync(path.join(dir, `big-${i}.bin`), randomBytes(4 * 1024 * 1024));
  const src = volumeSource(dir);
  const pids = await waitFor(() => {
    const found = childrenWith(dir);
    return found.length > 0 ? found : null;
  }, 'the archiving child to start');
  process.kill(pids[0]!, 'SIGKILL');
  await assert.rejects(buffer(src), (e: Error & { detail?: string }) => /archiving the volume stopped: its process was killed \(SIGKILL\)/.test(e.message) && typeof e.detail === 'string');
  assert.deepEqual(childrenWith('volume-child'), []);
});

test('an abort kills the archiving child, and a missing folder fails the archive with its own words', async () => {
  const { dir } = await volumeAndArtifact('archive-aborted');
  const abort = new AbortController();
  const src = volumeSource(dir, abort.signal);
  await waitFor(() => childrenWith(dir).length > 0 || null, 'the archiving child to start');
  abort.abort();
  await assert.rejects(buffer(src), { name: 'AbortError' });
  await waitFor(() => childrenWith('volume-child').length === 0 || null, 'the killed child to be gone');
  await assert.rejects(buffer(volumeSource(path.join(root, 'no-such-folder'))), /archiving the volume failed \(exit 1\); the server log has its output/);
});
