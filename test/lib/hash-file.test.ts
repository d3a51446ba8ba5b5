import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { hashFileHandle } from '../../src/lib/hash-file.js';
import { tempDir } from '../support/harness.js';

test('a file is hashed whole through one buffer: the same sha256 and size as hashing its bytes, at sizes around the buffer', async () => {
  const dir = tempDir('berth-hash-file-');
  try {
    for (const size of [0, 1, 1024 * 1024 - 1, 1024 * 1024, 1024 * 1024 + 1, 3 * 1024 * 1024 + 12345]) {
      const bytes = randomBytes(size);
      const file = path.join(dir, `f-${size}`);
      writeFileSync(file, bytes);
      const fh = await open(file, 'r');
      const seen: number[] = [];
      try {
        const got = await hashFileHandle(fh, (n) => seen.push(n));
        assert.deepEqual(got, { sha256: createHash('sha256').update(bytes).digest('hex'), sizeBytes: size }, `size ${size}`);
        assert.equal(seen.at(-1), size, 'the last progress is the whole size');
      } finally {
        await fh.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an aborted signal stops the read with its reason', async () => {
  const dir = tempDir('berth-hash-file-');
  try {
    const file = path.join(dir, 'f');
    writeFileSync(file, randomBytes(2 * 1024 * 1024));
    const fh = await open(file, 'r');
    const ac = new AbortController();
    ac.abort(new Error('cancelled by the test'));
    try {
      await assert.rejects(hashFileHandle(fh, undefined, ac.signal), /cancelled by the test/);
    } finally {
      await fh.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
