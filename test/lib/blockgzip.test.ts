import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { BLOCK_BYTES, BlockGunzip, BlockGzip } from '../../src/lib/blockgzip.js';

/** Feeds `data` in chunks of `step` bytes through `t`; a slow reader when `slow`. */
async function through(t: NodeJS.ReadWriteStream, data: Buffer, step = 64 * 1024, slow = false): Promise<Buffer> {
  const out: Buffer[] = [];
  const chunks = function* () {
    for (let i = 0; i < data.length; i += step) yield data.subarray(i, i + step);
  };
  await pipeline(
    Readable.from(chunks(), { objectMode: false }),
    t,
    new Writable({
      highWaterMark: 1024,
      write(c: Buffer, _e, cb) {
        out.push(c);
        if (slow) setImmediate(cb);
        else cb();
      },
    }),
  );
  return Buffer.concat(out);
}

function mixed(bytes: number): Buffer {
  const text = Buffer.from('berth keeps backups honest; '.repeat(4096));
  const parts: Buffer[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const p = i % 2 ? randomBytes(Math.min(300_000, bytes - n)) : text.subarray(0, Math.min(text.length, bytes - n));
    parts.push(p);
    n += p.length;
  }
  return Buffer.concat(parts);
}

describe('blocked gzip', () => {
  for (const size of [0, 1, BLOCK_BYTES - 1, BLOCK_BYTES, BLOCK_BYTES + 1, Math.floor(5.5 * BLOCK_BYTES)]) {
    it(`${size} bytes round-trip, and the output is ordinary gzip to zlib and to gzip(1)`, async () => {
      const data = mixed(size);
      const gz = await through(new BlockGzip(6), data);
      assert.deepEqual(await through(new BlockGunzip(), gz), data);
      assert.deepEqual(gunzipSync(gz), data);
      const sys = spawnSync('gzip', ['-dc'], { input: gz, maxBuffer: 64 * 1024 * 1024 });
      assert.equal(sys.status, 0, String(sys.stderr));
      assert.deepEqual(sys.stdout, data);
    });
  }

  it('cuts the input into one member per 1 MiB block', async () => {
    const gz = await through(new BlockGzip(1), Buffer.alloc(3 * BLOCK_BYTES + 10, 7));
    let members = 0;
    for (let off = 0; off < gz.length; members++) off += gz.readUInt32LE(off + 16);
    assert.equal(members, 4);
  });

  it('reads headers and members split across any chunk boundary, with a slow reader', async () => {
    const data = mixed(3 * 65536 + 12345);
    const gz = await through(new BlockGzip(6, 65536), data);
    // 7 and 19 split every 20-byte header somewhere; 4096 with a reader slower than the writer.
    for (const step of [7, 19, 4096]) assert.deepEqual(await through(new BlockGunzip(), gz, step, step === 4096), data);
  });

  it('reads plain single-member gzip (other tools, older artifacts) through a streaming gunzip', async () => {
    const data = mixed(3 * BLOCK_BYTES);
    const gz = gzipSync(data);
    assert.deepEqual(await through(new BlockGunzip(), gz, 1000), data);
    assert.deepEqual(await through(new BlockGunzip(), gz, 64 * 1024, true), data);
    // The smallest gzip there is (an empty member, 20 bytes) is not mistaken for a block header.
    assert.deepEqual(await through(new BlockGunzip(), gzipSync(Buffer.alloc(0))), Buffer.alloc(0));
  });

  it('refuses damaged input: a flipped byte, a truncated end, a wrong member length, trailing bytes, nothing at all', async () => {
    const data = mixed(3 * BLOCK_BYTES);
    const gz = await through(new BlockGzip(6), data);
    const flipped = Buffer.from(gz);
    flipped[Math.floor(gz.length / 2)]! ^= 0x40;
    await assert.rejects(through(new BlockGunzip(), flipped));
    await assert.rejects(through(new BlockGunzip(), gz.subarray(0, gz.length - 100)));
    const longer = Buffer.from(gz);
    longer.writeUInt32LE(longer.readUInt32LE(16) + 5, 16);
    await assert.rejects(through(new BlockGunzip(), longer));
    const shorter = Buffer.from(gz);
    shorter.writeUInt32LE(shorter.readUInt32LE(16) - 5, 16);
    await assert.rejects(through(new BlockGunzip(), shorter));
    const huge = Buffer.from(gz);
    huge.writeUInt32LE(0xffffffff, 16);
    await assert.rejects(through(new BlockGunzip(), huge), /no valid block header/);
    await assert.rejects(through(new BlockGunzip(), Buffer.concat([gz, Buffer.from('junk')])));
    await assert.rejects(through(new BlockGunzip(), Buffer.alloc(0)));
    await assert.rejects(through(new BlockGunzip(), gzipSync(data).subarray(0, 5000)));
  });

  it('refuses a block that inflates beyond 64 MiB (a crafted artifact cannot make one block hold unbounded memory)', async () => {
    const bomb = await through(new BlockGzip(1, 80 * 1024 * 1024), Buffer.alloc(80 * 1024 * 1024), 8 * 1024 * 1024);
    await assert.rejects(through(new BlockGunzip(), bomb), /inflates to more than/);
  });
});
