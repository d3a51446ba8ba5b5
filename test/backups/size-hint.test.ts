import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { volumeSizeHint } from '../../src/modules/backups/volume-archive.js';
import { volumeSource } from '../../src/modules/backups/volume-process.js';
import { putPartSize } from '../../src/modules/backups/s3-storage.js';
import { tempDir } from '../support/harness.js';
import { fillVolume } from './helpers.js';

const MiB = 1024 * 1024;

describe('artifact size hints for S3 multipart uploads', () => {
  it('parts stay 8 MiB up to what 10 000 of them hold, then grow in whole MiB (never past 5 GiB)', () => {
    assert.equal(putPartSize(undefined), 8 * MiB);
    assert.equal(putPartSize(0), 8 * MiB);
    assert.equal(putPartSize(1024 * MiB), 8 * MiB);
    const big = 200 * 1024 * MiB;
    const part = putPartSize(big);
    assert.ok(part > 8 * MiB);
    assert.equal(part % MiB, 0);
    assert.ok(part * 10_000 >= big * 1.25, 'room for the estimate and a quarter more');
    assert.equal(putPartSize(100 * 1024 * 1024 * MiB), 5 * 1024 * MiB);
  });

  it("a volume's hint is never below the size of its gzipped tar, even for incompressible data", async () => {
    const dir = tempDir('berth-hint-');
    fillVolume(dir, 3);
    mkdirSync(path.join(dir, 'many'), { recursive: true });
    for (let i = 0; i < 300; i++) writeFileSync(path.join(dir, 'many', `${'long-name-'.repeat(12)}${i}.bin`), randomBytes(i * 37));
    writeFileSync(path.join(dir, 'big.bin'), randomBytes(3 * MiB));
    let actual = 0;
    for await (const chunk of volumeSource(dir)) actual += (chunk as Buffer).length;
    const hint = await volumeSizeHint(dir);
    assert.ok(hint >= actual, `hint ${hint} >= actual ${actual}`);
    assert.ok(hint < actual * 2, `hint ${hint} is not wildly above ${actual}`);
  });
});
