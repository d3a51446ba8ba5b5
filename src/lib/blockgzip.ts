// One file on purpose (about 345 lines): the writer (BlockGzip) and the reader (BlockGunzip) are the
// two halves of one on-disk format. The member header is written in BlockGzip.submit and read in
// memberLength a few screens below; both share the private zlib Slot, the header constants and the
// size limits. Kept together, a change to the format is made and checked in one place; split, the two
// halves could drift apart without a compile error.
import { availableParallelism } from 'node:os';
import { Transform, type TransformCallback } from 'node:stream';
import { constants, createGunzip, createGzip, type Gunzip, type Gzip } from 'node:zlib';

/**
 * Blocked gzip: the input is cut into blocks, each compressed on its own into one gzip member, several
 * at once on libuv's thread pool. Concatenated members are a valid gzip file (RFC 1952, section 2.2):
 * `gzip -d`, `tar xzf` and Node's gunzip read it like any other. Each member's header carries an extra
 * field (subfield `Br`, the member's whole length as 32-bit little endian), the same idea as BGZF's
 * `BC`, so a reader can find the members without inflating and inflate several at once too.
 *
 * Each member's CRC-32 and length are checked on the way back, like a single-member gzip.
 *
 * Memory: a fixed set of zlib streams is reused member after member (`depth` of them), input blocks
 * come from a small pool, and output is zlib's own chunks passed on without copying. So the bytes
 * allocated per byte of data stay what a single streaming gzip allocates; every allocated buffer is
 * garbage the collector must find, and that garbage is most of a backup's peak memory.
 */

export const BLOCK_BYTES = 1024 * 1024;
const HEADER_BYTES = 20; // 10 fixed + XLEN (2) + subfield id (2) + subfield length (2) + value (4)
const SI1 = 0x42; // 'B'
const SI2 = 0x72; // 'r'
/**
 * The chunk size of the backup data path: file reads (tar's, the destination's) and compressed
 * output. One size, so a freed buffer fits the next allocation in place (docs/decisions.md, "Memory").
 */
export const CHUNK_BYTES = 256 * 1024;
/**
 * Limits for reading: a member's compressed size and what it may inflate to. Ours are about 1 MiB
 * each way; the limits keep a damaged or crafted length from making one member hold unbounded memory.
 */
const MAX_MEMBER_BYTES = 16 * 1024 * 1024;
const MAX_MEMBER_OUTPUT = 64 * 1024 * 1024;

/** How many blocks are compressed (or inflated) at once: one per core, at least two. */
export function defaultDepth(): number {
  return Math.max(2, Math.min(8, availableParallelism()));
}

/** A reusable zlib stream; collects what it outputs until taken. */
class Slot<Z extends Gzip | Gunzip> {
  private out: Buffer[] = [];
  private failed: Error | null = null;
  bytes = 0;
  constructor(
    readonly z: Z,
    maxBytes = Infinity,
  ) {
    z.on('data', (b: Buffer) => {
      this.out.push(b);
      this.bytes += b.length;
      if (this.bytes > maxBytes) z.destroy(new Error(`corrupt gzip: a block inflates to more than ${maxBytes} bytes`));
    });
    // Failures are seen through the member they belong to (see `op`).
    z.on('error', (e: Error) => {
      this.failed ??= e;
    });
  }
  take(): Buffer[] {
    const out = this.out;
    this.out = [];
    this.bytes = 0;
    return out;
  }
  /** Runs `start`, settling when it calls back or the stream fails (now or earlier). */
  op(start: (done: (err?: Error | null) => void) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.failed) return reject(this.failed);
      const fail = (e: Error) => reject(e);
      this.z.once('error', fail);
      start((err) => {
        this.z.off('error', fail);
        const e = err ?? this.failed;
        if (e) reject(e);
        else resolve();
      });
    });
  }
  close(): void {
    this.z.close();
  }
}

/** The first `n` bytes of `parts` (they may span several). */
function frontBytes(parts: Buffer[], n: number): Buffer {
  if (parts[0] && parts[0].length >= n) return parts[0].subarray(0, n);
  const all = Buffer.concat(parts);
  if (all.length < n) throw new Error('zlib produced a member shorter than its header');
  return all.subarray(0, n);
}

/** Drops the first `n` bytes of `parts` (they may span several). */
function dropFront(parts: Buffer[], n: number): Buffer[] {
  const out: Buffer[] = [];
  for (const p of parts) {
    if (n >= p.length) {
      n -= p.length;
      continue;
    }
    out.push(n > 0 ? p.subarray(n) : p);
    n = 0;
  }
  return out;
}

/** Compresses its input into blocked gzip (see above). */
export class BlockGzip extends Transform {
  private readonly slots: Slot<Gzip>[] = [];
  private readonly pool: Buffer[] = [];
  private readonly pending: Promise<Buffer[]>[] = [];
  private block: Buffer | null = null;
  private fill = 0;
  private members = 0;

  constructor(
    private readonly level = 6,
    private readonly blockBytes = BLOCK_BYTES,
    private readonly depth = defaultDepth(),
  ) {
    super({ highWaterMark: blockBytes });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    void this.accept(chunk).then(() => cb(), cb);
  }

  override _flush(cb: TransformCallback): void {
    void (async () => {
      if (this.fill > 0 || this.members === 0) await this.submit();
      while (this.pending.length > 0) this.pushAll(await this.pending.shift()!);
      for (const s of this.slots) s.close();
    })().then(() => cb(), cb);
  }

  override _destroy(err: Error | null, cb: (error: Error | null) => void): void {
    for (const s of this.slots) s.close();
    cb(err);
  }

  private async accept(chunk: Buffer): Promise<void> {
    let off = 0;
    while (off < chunk.length) {
      this.block ??= this.pool.pop() ?? Buffer.allocUnsafe(this.blockBytes);
      const n = Math.min(chunk.length - off, this.blockBytes - this.fill);
      chunk.copy(this.block, this.fill, off, off + n);
      this.fill += n;
      off += n;
      if (this.fill === this.blockBytes) await this.submit();
    }
  }

  private async submit(): Promise<void> {
    // Round robin: the member this slot compressed last is the oldest pending one.
    if (this.pending.length >= this.depth) this.pushAll(await this.pending.shift()!);
    const block = this.block ?? Buffer.allocUnsafe(0);
    const len = this.fill;
    this.block = null;
    this.fill = 0;
    const i = this.members++ % this.depth;
    const slot = (this.slots[i] ??= new Slot(createGzip({ level: this.level, chunkSize: CHUNK_BYTES })));
    const p = slot
      .op((done) => {
        slot.z.write(block.subarray(0, len));
        slot.z.flush(constants.Z_FINISH, done);
      })
      .then(() => {
        const bytes = slot.bytes;
        const parts = slot.take();
        (slot.z as Gzip & { reset(): void }).reset();
        if (block.length === this.blockBytes && this.pool.length <= this.depth) this.pool.push(block);
        // zlib's member starts with a 10-byte header without FEXTRA; ours has it, with the length.
        const first = frontBytes(parts, 10);
        const header = Buffer.allocUnsafe(HEADER_BYTES);
        first.copy(header, 0, 0, 10);
        header[3] = header[3]! | 0x04;
        header.writeUInt16LE(8, 10);
        header[12] = SI1;
        header[13] = SI2;
        header.writeUInt16LE(4, 14);
        header.writeUInt32LE(HEADER_BYTES + bytes - 10, 16);
        return [header, ...dropFront(parts, 10)];
      });
    // A failure is seen when its turn comes; until then it must not count as unhandled.
    p.catch(() => {});
    this.pending.push(p);
  }

  private pushAll(parts: Buffer[]): void {
    for (const p of parts) this.push(p);
  }
}

/** The whole length of the blocked member starting at `buf[off]`, or -1 when it is not one of ours. */
function memberLength(buf: Buffer, off: number): number {
  if (buf[off] !== 0x1f || buf[off + 1] !== 0x8b || buf[off + 2] !== 8 || buf[off + 3] !== 0x04) return -1;
  if (buf.readUInt16LE(off + 10) !== 8 || buf[off + 12] !== SI1 || buf[off + 13] !== SI2 || buf.readUInt16LE(off + 14) !== 4) return -1;
  return buf.readUInt32LE(off + 16);
}

interface Member {
  slot: Slot<Gunzip>;
  length: number;
  written: number;
  /** The member's last four bytes: its uncompressed length (mod 2^32). */
  tail: Buffer;
  finish: (last: Promise<void>) => void;
}

/**
 * Decompresses gzip. Blocked gzip (see above) is inflated several members at once, each member's
 * bytes handed to its zlib stream as they arrive; anything else (a single-member file, another tool's
 * output) goes through one plain streaming gunzip.
 */
export class BlockGunzip extends Transform {
  private mode: 'detect' | 'blocked' | 'plain' = 'detect';
  private plain: Gunzip | null = null;
  private readonly slots: Slot<Gunzip>[] = [];
  private readonly pending: Promise<Buffer[]>[] = [];
  private head: Buffer[] = [];
  private headBytes = 0;
  private member: Member | null = null;
  private members = 0;

  constructor(
    private readonly chunkSize = CHUNK_BYTES,
    private readonly depth = defaultDepth(),
  ) {
    super({ highWaterMark: BLOCK_BYTES });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.mode === 'plain') return this.toPlain(chunk, cb);
    void this.accept(chunk).then(() => cb(), cb);
  }

  override _flush(cb: TransformCallback): void {
    if (this.mode === 'plain') {
      this.plain!.once('end', () => cb());
      this.plain!.end();
      return;
    }
    void (async () => {
      if (this.headBytes > 0 || this.member || this.members === 0) throw new Error('unexpected end of file');
      while (this.pending.length > 0) for (const b of await this.pending.shift()!) this.push(b);
      for (const s of this.slots) s.close();
    })().then(() => cb(), cb);
  }

  override _destroy(err: Error | null, cb: (error: Error | null) => void): void {
    this.plain?.destroy();
    for (const s of this.slots) s.close();
    cb(err);
  }

  private toPlain(chunk: Buffer, cb: TransformCallback): void {
    if (this.plain!.write(chunk)) cb();
    else this.plain!.once('drain', () => cb());
  }

  private startPlain(first: Buffer, cb: TransformCallback): void {
    this.mode = 'plain';
    const g = createGunzip({ chunkSize: this.chunkSize });
    this.plain = g;
    g.on('data', (b: Buffer) => {
      if (!this.push(b)) g.pause();
    });
    g.on('error', (e) => this.destroy(e));
    // Reading resumes the inner gunzip; Transform's own _read still releases a held write callback.
    const base = Transform.prototype._read;
    this._read = (size: number) => {
      g.resume();
      base.call(this, size);
    };
    this.toPlain(first, cb);
  }

  private async accept(chunk: Buffer): Promise<void> {
    let off = 0;
    while (off < chunk.length) {
      if (!this.member) {
        // Gather the fixed header (it may straddle chunks).
        const n = Math.min(HEADER_BYTES - this.headBytes, chunk.length - off);
        this.head.push(chunk.subarray(off, off + n));
        this.headBytes += n;
        off += n;
        if (this.headBytes < HEADER_BYTES) return;
        const head = this.head.length === 1 ? this.head[0]! : Buffer.concat(this.head);
        this.head = [];
        this.headBytes = 0;
        const len = memberLength(head, 0);
        if (len < 0 && this.mode === 'detect') {
          // Not blocked gzip: everything so far, and the rest, goes through a plain gunzip.
          const first = Buffer.concat([head, chunk.subarray(off)]);
          return new Promise<void>((resolve, reject) => this.startPlain(first, (e) => (e ? reject(e) : resolve())));
        }
        if (len < HEADER_BYTES + 8 || len > MAX_MEMBER_BYTES) throw new Error(`corrupt gzip: block ${this.members + 1} has no valid block header`);
        this.mode = 'blocked';
        await this.begin(len);
        this.write_(head);
        continue;
      }
      const m = this.member;
      const n = Math.min(m.length - m.written, chunk.length - off);
      this.write_(chunk.subarray(off, off + n));
      off += n;
    }
  }

  /** Starts a member on its slot, once the member that slot had before is passed on. */
  private async begin(length: number): Promise<void> {
    if (this.pending.length >= this.depth) for (const b of await this.pending.shift()!) this.push(b);
    const index = this.members++;
    const slot = (this.slots[index % this.depth] ??= new Slot(createGunzip({ chunkSize: this.chunkSize }), MAX_MEMBER_OUTPUT));
    let finish!: (last: Promise<void>) => void;
    const done = new Promise<void>((resolve, reject) => {
      finish = (last) => last.then(resolve, reject);
    }).then(() => {
      const bytes = slot.bytes;
      const out = slot.take();
      // zlib checked the member's CRC-32 and length; this checks the member ended where its header said.
      if (bytes !== m.tail.readUInt32LE(0)) throw new Error(`corrupt gzip: block ${index + 1} does not end where its header says`);
      return out;
    });
    done.catch(() => {});
    const m: Member = { slot, length, written: 0, tail: Buffer.alloc(4), finish };
    this.member = m;
    this.pending.push(done);
  }

  /** Hands the next bytes of the current member to its zlib stream. */
  private write_(part: Buffer): void {
    const m = this.member!;
    const start = m.written;
    m.written += part.length;
    // Keep the bytes that fall in the member's last four.
    for (let k = Math.max(start, m.length - 4); k < m.written; k++) m.tail[k - (m.length - 4)] = part[k - start]!;
    if (m.written < m.length) {
      m.slot.z.write(part);
      return;
    }
    this.member = null;
    m.finish(m.slot.op((cb) => m.slot.z.write(part, (err) => cb(err))));
  }
}
