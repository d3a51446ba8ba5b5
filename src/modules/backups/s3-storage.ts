import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  UploadPartCopyCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { OutboundPolicy } from '../../lib/outbound.js';
import { checkKey, type S3DestinationConfig, type Storage } from './storage.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** S3's limits: CopyObject sources, part sizes (all but the last part) and part count. */
const MAX_COPY_OBJECT = 5 * GiB;
const MIN_PART = 5 * MiB;
const MAX_PART = 5 * GiB;
const MAX_PARTS = 10_000;
/** Part size of streamed uploads (`put`): two parts in flight at most. */
const PUT_PART = 8 * MiB;

/**
 * Part size of a streamed upload: 8 MiB (two parts in flight), larger when the size hint says the
 * object would need more than 10 000 of them (with a quarter of slack for an estimate that is low).
 */
export function putPartSize(sizeHint?: number): number {
  if (!sizeHint || !Number.isFinite(sizeHint) || sizeHint <= 0) return PUT_PART;
  const part = Math.max(PUT_PART, Math.ceil((sizeHint * 1.25) / MAX_PARTS / MiB) * MiB);
  return Math.min(part, MAX_PART);
}

export interface S3StorageOptions {
  /**
   * Largest object `finalize` copies with one CopyObject (S3 refuses sources above 5 GiB, the
   * default and the upper bound); larger ones get a multipart copy. Lowered by tests.
   */
  copyThreshold?: number;
  /** Part size of the multipart copy (default 512 MiB; at least 5 MiB, grown to stay within 10 000 parts). */
  copyPartSize?: number;
  /** Parts copied at once (default 4). */
  copyConcurrency?: number;
  /** Where a non-fatal problem is reported (pino-compatible); nothing secret is passed. */
  log?: { warn(obj: Record<string, unknown>, msg: string): void };
  /**
   * Every connection's address is checked by this policy at connect time (user-supplied endpoints
   * must not reach internal addresses: src/lib/outbound.ts). Servers always pass it (openStorage);
   * only tests that build a storage by hand leave it out.
   */
  outbound?: OutboundPolicy;
}

type SdkError = { name?: string; Code?: string; message?: string; $metadata?: { httpStatusCode?: number } };

/** The server does not implement the operation (s3rver and some S3-compatible servers for UploadPartCopy). */
function notImplemented(e: unknown): boolean {
  const err = e as SdkError;
  return err?.name === 'NotImplemented' || err?.Code === 'NotImplemented' || err?.$metadata?.httpStatusCode === 501;
}

function errorText(e: unknown): string {
  const err = e as SdkError;
  return (err?.message || err?.name || String(e)).slice(0, 300);
}

/** The server answered the part copy with NotImplemented; the upload it was for is already aborted (or tried). */
class PartCopyUnsupported extends Error {
  constructor(cause: unknown) {
    super('UploadPartCopy is not implemented by the server', { cause });
  }
}

/** An S3-compatible bucket (any endpoint, path-style or virtual-hosted), streaming multipart uploads. */
export class S3Storage implements Storage {
  readonly client: S3Client;
  private readonly prefix: string;
  private readonly copyThreshold: number;
  private readonly copyPartSize: number;
  private readonly copyConcurrency: number;
  private readonly log: NonNullable<S3StorageOptions['log']> | null;

  constructor(
    readonly cfg: S3DestinationConfig,
    opts: S3StorageOptions = {},
  ) {
    this.client = new S3Client({
      endpoint: cfg.endpoint || undefined,
      region: cfg.region || 'us-east-1',
      forcePathStyle: cfg.forcePathStyle,
      credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey },
      maxAttempts: 3,
      // Sockets only to checked addresses; the SDK's handler never follows redirects, so an answer
      // cannot send a request elsewhere either.
      ...(opts.outbound ? { requestHandler: { ...opts.outbound.agents(), connectionTimeout: 10_000 } } : {}),
      // Only compute checksums when an operation requires them (S3-compatible servers differ).
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const p = (cfg.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.prefix = p ? `${p}/` : '';
    this.copyThreshold = Math.min(Math.max(0, opts.copyThreshold ?? MAX_COPY_OBJECT), MAX_COPY_OBJECT);
    this.copyPartSize = Math.min(Math.max(MIN_PART, opts.copyPartSize ?? 512 * MiB), MAX_PART);
    this.copyConcurrency = Math.max(1, Math.floor(opts.copyConcurrency ?? 4));
    this.log = opts.log ?? null;
  }

  private k(key: string): string {
    checkKey(key);
    return this.prefix + key;
  }

  /** The `x-amz-copy-source` value of a key of this storage. */
  private copySource(key: string): string {
    return `${this.cfg.bucket}/${this.k(key).split('/').map(encodeURIComponent).join('/')}`;
  }

  async put(key: string, body: Readable, signal?: AbortSignal, sizeHint?: number): Promise<void> {
    await this.upload(key, body, putPartSize(sizeHint), signal);
  }

  /** Streams `body` with lib-storage's multipart Upload; a failed upload is aborted (no parts left). */
  private async upload(key: string, body: Readable, partSize: number, signal?: AbortSignal): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.cfg.bucket, Key: this.k(key), Body: body },
      queueSize: 2,
      partSize,
      leavePartsOnError: false,
    });
    const onAbort = () => void upload.abort().catch(() => {});
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await upload.done();
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    if (signal?.aborted) throw new Error('aborted');
  }

  async get(key: string, signal?: AbortSignal): Promise<Readable> {
    const out = await this.client.send(new GetObjectCommand({ Bucket: this.cfg.bucket, Key: this.k(key) }), { abortSignal: signal });
    const body = out.Body;
    if (!body) throw new Error('empty object body');
    return body instanceof Readable ? body : Readable.fromWeb(body as never);
  }

  async size(key: string): Promise<number | null> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.cfg.bucket, Key: this.k(key) }));
      return out.ContentLength ?? 0;
    } catch (e) {
      const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
      if (err.name === 'NotFound' || err.name === 'NoSuchKey' || err.$metadata?.httpStatusCode === 404) return null;
      throw e;
    }
  }

  /**
   * Copies `from` to `to`, checks the copy's size and deletes `from`. Up to the copy threshold
   * (5 GiB) one CopyObject; above it a multipart copy (UploadPartCopy); when the server does not
   * implement UploadPartCopy, a streamed copy (GetObject into a multipart Upload). A failure
   * aborts the multipart upload, leaves `from` in place and throws.
   */
  async finalize(from: string, to: string): Promise<void> {
    const size = await this.size(from);
    if (size === null) throw new Error(`cannot finalize ${from}: the object does not exist`);
    if (size <= this.copyThreshold) {
      await this.client.send(new CopyObjectCommand({ Bucket: this.cfg.bucket, Key: this.k(to), CopySource: this.copySource(from) }));
    } else {
      try {
        await this.multipartCopy(from, to, size);
      } catch (e) {
        if (!(e instanceof PartCopyUnsupported)) throw e;
        await this.streamedCopy(from, to, size);
      }
    }
    const got = await this.size(to);
    if (got !== size) {
      await this.delete(to).catch(() => {});
      throw new Error(`finalize of ${from}: the copy has ${got ?? 'no'} bytes instead of ${size}`);
    }
    await this.delete(from);
  }

  /** Part size for `size` bytes: `preferred`, grown (whole MiB) so that at most 10 000 parts are needed. */
  private static partSizeFor(size: number, preferred: number): number {
    const part = Math.max(preferred, Math.ceil(size / MAX_PARTS / MiB) * MiB);
    if (part > MAX_PART) throw new Error(`an object of ${size} bytes exceeds the S3 multipart limits`);
    return part;
  }

  private async multipartCopy(from: string, to: string, size: number): Promise<void> {
    const Bucket = this.cfg.bucket;
    const Key = this.k(to);
    const CopySource = this.copySource(from);
    const partSize = S3Storage.partSizeFor(size, this.copyPartSize);
    const count = Math.ceil(size / partSize);
    const created = await this.client.send(new CreateMultipartUploadCommand({ Bucket, Key }));
    const UploadId = created.UploadId;
    if (!UploadId) throw new Error('CreateMultipartUpload returned no upload id');
    try {
      const parts: CompletedPart[] = new Array(count);
      let next = 0;
      const errors: unknown[] = [];
      // A few workers take the parts in order; after a failure no new part starts, and the ones in
      // flight are waited for so that the abort below comes after them (a part finishing after an
      // abort could otherwise be kept).
      const worker = async (): Promise<void> => {
        while (!errors.length && next < count) {
          const i = next++;
          const first = i * partSize;
          const last = Math.min(size, first + partSize) - 1;
          try {
            const out = await this.client.send(
              new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: i + 1, CopySource, CopySourceRange: `bytes=${first}-${last}` }),
            );
            const ETag = out.CopyPartResult?.ETag;
            if (!ETag) throw new Error(`UploadPartCopy of part ${i + 1} returned no ETag`);
            parts[i] = { ETag, PartNumber: i + 1 };
          } catch (e) {
            errors.push(e);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.copyConcurrency, count) }, worker));
      if (errors.length) throw errors[0];
      await this.client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
    } catch (e) {
      const abortError = await this.abortUpload(Key, UploadId);
      if (notImplemented(e)) {
        if (abortError) this.log?.warn({ bucket: Bucket, key: Key, uploadId: UploadId, err: errorText(abortError) }, 'could not abort an unused multipart upload');
        throw new PartCopyUnsupported(e);
      }
      // The error thrown is the server's own (callers describe it in Berth's words); the failed
      // abort goes to the log.
      if (abortError) this.log?.warn({ bucket: Bucket, key: Key, uploadId: UploadId, err: errorText(abortError) }, 'could not abort a failed multipart copy');
      throw e;
    }
  }

  /** Aborts a multipart upload; returns the error when that failed (an upload already gone is fine). */
  private async abortUpload(Key: string, UploadId: string): Promise<unknown> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.cfg.bucket, Key, UploadId }));
      return null;
    } catch (e) {
      const err = e as SdkError;
      if (err.name === 'NoSuchUpload' || err.$metadata?.httpStatusCode === 404) return null;
      return e;
    }
  }

  /** `from` read as a stream into a streaming multipart upload of `to` (never buffered whole). */
  private async streamedCopy(from: string, to: string, size: number): Promise<void> {
    const body = await this.get(from);
    try {
      await this.upload(to, body, S3Storage.partSizeFor(size, PUT_PART));
    } finally {
      body.destroy();
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.cfg.bucket, Key: this.k(key) }));
  }

  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    let token: string | undefined;
    const full = this.prefix + prefix;
    for (let page = 0; page < 10000; page++) {
      const res = await this.client.send(new ListObjectsV2Command({ Bucket: this.cfg.bucket, Prefix: full, ContinuationToken: token }));
      for (const o of res.Contents ?? []) if (o.Key) out.push(o.Key.slice(this.prefix.length));
      if (!res.IsTruncated || !res.NextContinuationToken) break;
      token = res.NextContinuationToken;
    }
    return out.sort();
  }
}
