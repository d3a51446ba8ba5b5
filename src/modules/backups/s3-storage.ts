import { Readable } from 'node:stream';
import { CopyObjectCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { checkKey, type S3DestinationConfig, type Storage } from './storage.js';

/** An S3-compatible bucket (any endpoint, path-style or virtual-hosted), streaming multipart uploads. */
export class S3Storage implements Storage {
  readonly client: S3Client;
  private readonly prefix: string;

  constructor(readonly cfg: S3DestinationConfig) {
    this.client = new S3Client({
      endpoint: cfg.endpoint || undefined,
      region: cfg.region || 'us-east-1',
      forcePathStyle: cfg.forcePathStyle,
      credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey },
      maxAttempts: 3,
      // Only compute checksums when an operation requires them (S3-compatible servers differ).
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const p = (cfg.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.prefix = p ? `${p}/` : '';
  }

  private k(key: string): string {
    checkKey(key);
    return this.prefix + key;
  }

  async put(key: string, body: Readable, signal?: AbortSignal): Promise<void> {
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.cfg.bucket, Key: this.k(key), Body: body },
      queueSize: 2,
      partSize: 8 * 1024 * 1024,
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

  async finalize(from: string, to: string): Promise<void> {
    const src = `${this.cfg.bucket}/${this.k(from).split('/').map(encodeURIComponent).join('/')}`;
    await this.client.send(new CopyObjectCommand({ Bucket: this.cfg.bucket, Key: this.k(to), CopySource: src }));
    await this.delete(from);
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

