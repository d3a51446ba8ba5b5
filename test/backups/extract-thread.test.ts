/**
 * A volume artifact is extracted on a thread of its own (src/modules/backups/extract-thread.ts): the
 * same folder comes out as on the main thread, a damaged artifact or a failing source fails the
 * extraction with its error, and an abort stops it.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { extractOffThread } from '../../src/modules/backups/extract-thread.js';
import { volumeSource } from '../../src/modules/backups/volume-archive.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'berth-extract-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A volume with a few files (one of several MiB, incompressible) and its artifact's bytes. */
async function volumeAndArtifact(name: string): Promise<{ dir: string; artifact: Buffer }> {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, 'sub', 'deeper'), { recursive: true });
  writeFileSync(path.join(dir, 'a.txt'), 'hello\n');
  writeFileSync(path.join(dir, 'sub', 'big.bin'), randomBytes(6 * 1024 * 1024));
  writeFileSync(path.join(dir, 'sub', 'deeper', 'text.txt'), 'line\n'.repeat(200_000));
  return { dir, artifact: await buffer(volumeSource(dir)) };
}

/** The artifact as a storage would stream it: chunks of `size` bytes. */
function streamOf(bytes: Buffer, size = 256 * 1024): Readable {
  return Readable.from((function* () {
    for (let i = 0; i < bytes.length; i += size) yield Buffer.from(bytes.subarray(i, i + size));
  })());
}

const files = (dir: string) =>
  readdirSync(dir, { recursive: true })
    .map(String)
    .filter((n) => statSync(path.join(dir, n)).isFile())
    .sort()
    .map((n) => [n, readFileSync(path.join(dir, n)).toString('base64').length] as const);

test('an artifact extracted on its own thread gives back the folder that was archived, byte for byte', async () => {
  const { dir, artifact } = await volumeAndArtifact('whole');
  const out = path.join(root, 'whole-out');
  await extractOffThread(streamOf(artifact), out);
  assert.deepEqual(files(out), files(dir));
  assert.deepEqual(readFileSync(path.join(out, 'sub', 'big.bin')), readFileSync(path.join(dir, 'sub', 'big.bin')));
});

test('chunks that are slices of a larger buffer are copied, and the source keeps its bytes', async () => {
  const { dir, artifact } = await volumeAndArtifact('slices');
  const kept = Buffer.from(artifact);
  const out = path.join(root, 'slices-out');
  // Slices of one buffer (as an HTTP body arrives): moving their memory would empty the source.
  await extractOffThread(Readable.from((function* () {
    for (let i = 0; i < artifact.length; i += 100_000) yield artifact.subarray(i, i + 100_000);
  })()), out);
  assert.deepEqual(files(out), files(dir));
  assert.deepEqual(artifact, kept);
});

test('a damaged artifact fails the extraction with the unpacker\'s error', async () => {
  const { artifact } = await volumeAndArtifact('damaged');
  const cut = artifact.subarray(0, Math.floor(artifact.length / 2));
  await assert.rejects(extractOffThread(streamOf(cut), path.join(root, 'damaged-out')), /unexpected end of file|TAR_BAD_ARCHIVE|TAR_ABORT/i);
  // Not gzip at all, and longer than the first chunk: the unpacker's error, not the stopped source's.
  const garbage = randomBytes(3_000_000);
  await assert.rejects(extractOffThread(streamOf(garbage), path.join(root, 'garbage-out')), (e: NodeJS.ErrnoException) => e.code !== 'ERR_STREAM_PREMATURE_CLOSE' && /header|gzip|magic|zlib/i.test(e.message));
});

test('a source that fails fails the extraction with the source\'s error', async () => {
  const { artifact } = await volumeAndArtifact('source-fails');
  const src = new PassThrough();
  src.write(artifact.subarray(0, 1024 * 1024));
  setTimeout(() => src.destroy(new Error('the storage went away')), 50);
  await assert.rejects(extractOffThread(src, path.join(root, 'source-fails-out')), /the storage went away/);
});

test('an abort stops the extraction and answers an AbortError', async () => {
  const { artifact } = await volumeAndArtifact('aborted');
  const src = new PassThrough();
  src.write(artifact.subarray(0, 2 * 1024 * 1024));
  const abort = new AbortController();
  const run = extractOffThread(src, path.join(root, 'aborted-out'), abort.signal);
  setTimeout(() => abort.abort(), 100);
  await assert.rejects(run, { name: 'AbortError' });
  await assert.rejects(extractOffThread(streamOf(artifact), path.join(root, 'never'), AbortSignal.abort()), { name: 'AbortError' });
});
