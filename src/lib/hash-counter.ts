import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

export type ProgressFn = (bytes: number) => void;

/**
 * Counts and hashes (sha256) the bytes passing through; reports progress at most every 250 ms. With
 * `limit`, the stream fails with `limit.error()` once more than `limit.bytes` have passed.
 */
export class HashCounter extends Transform {
  readonly hash: Hash = createHash('sha256');
  bytes = 0;
  private last = 0;

  constructor(
    private readonly onProgress?: ProgressFn,
    private readonly hashing = true,
    private readonly limit?: { bytes: number; error: () => Error },
  ) {
    super({ highWaterMark: 1024 * 1024 });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.hashing) this.hash.update(chunk);
    this.bytes += chunk.length;
    if (this.limit && this.bytes > this.limit.bytes) return cb(this.limit.error());
    const now = Date.now();
    if (this.onProgress && now - this.last >= 250) {
      this.last = now;
      this.onProgress(this.bytes);
    }
    cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    this.onProgress?.(this.bytes);
    cb();
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}
