import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
// @ts-expect-error s3rver ships no type declarations
import S3rver from 's3rver';
// @ts-expect-error s3rver ships no type declarations
import S3Error from 's3rver/lib/models/error.js';
import { S3Storage, type S3StorageOptions } from '../../src/modules/backups/s3-storage.js';
import { tempDir } from '../support/harness.js';
import { startS3 } from './s3.js';

/**
 * `S3Storage.finalize` above the CopyObject limit, on real s3rver with the threshold lowered to
 * 4 MiB and 5 MiB parts. s3rver answers UploadPartCopy with NotImplemented (the streamed
 * fallback), and implements neither ListMultipartUploads nor AbortMultipartUpload; the second
 * server below adds those three operations on top of s3rver's own store (parts are written and
 * assembled by s3rver itself), so the multipart copy and its cleanup can be checked too.
 */

const MiB = 1024 * 1024;
const SMALL: S3StorageOptions = { copyThreshold: 4 * MiB, copyPartSize: 5 * MiB, copyConcurrency: 3 };
const BIG = 3 * 5 * MiB + 12_345; // four parts of the multipart copy, the last one short

type Endpoint = { endpoint: string; bucket: string; accessKeyId: string; secretAccessKey: string };

function storageOn(s3: Endpoint, opts: S3StorageOptions = SMALL, bucket = s3.bucket): { storage: S3Storage; commands: string[] } {
  const storage = new S3Storage(
    { kind: 's3', endpoint: s3.endpoint, region: 'us-east-1', bucket, prefix: 'team/', accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true },
    opts,
  );
  // Records the SDK commands sent (an observer in the client's own middleware stack; nothing is stubbed).
  const commands: string[] = [];
  storage.client.middlewareStack.add(
    (next, context) => async (args) => {
      commands.push(String(context.commandName));
      return next(args);
    },
    { step: 'initialize', name: 'recordCommands' },
  );
  return { storage, commands };
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function read(storage: S3Storage, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of await storage.get(key)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function putRandom(storage: S3Storage, key: string, size: number): Promise<Buffer> {
  const data = randomBytes(size);
  await storage.put(key, Readable.from([data]));
  assert.equal(await storage.size(key), size);
  return data;
}

const count = (list: string[], name: string) => list.filter((c) => c === name).length;

interface Hooks {
  /** Runs before an UploadPartCopy is served; may throw an S3Error. */
  partCopy?: (part: number) => Promise<void>;
  /** Runs once an UploadPartCopy opened its source range, before the part is written. */
  partCopyRead?: (part: number) => Promise<void>;
  /** Runs before a plain UploadPart is served; may throw an S3Error. */
  uploadPart?: (part: number) => Promise<void>;
}

/**
 * s3rver plus UploadPartCopy (unless `partCopy` is false: then s3rver's own NotImplemented
 * answers), ListMultipartUploads and AbortMultipartUpload, all over s3rver's FilesystemStore.
 */
async function startS3Multipart(opts: { partCopy: boolean }) {
  const bucket = 'berth-backups';
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: tempDir('berth-s3x-'), configureBuckets: [{ name: bucket, configs: [] }] } as never);
  const store = server.store;
  const uploadsDir = (b: string): string => store.getResourcePath(b, undefined, 'uploads');
  const hooks: Hooks = {};
  const ranges: Array<{ part: number; first: number; last: number }> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const ext = async (ctx: any, next: () => Promise<void>) => {
    const [b, ...rest] = ctx.path.slice(1).split('/').map(decodeURIComponent);
    const key = rest.join('/');
    if (ctx.method === 'GET' && b && !key && 'uploads' in ctx.query) {
      if (!(await store.getBucket(b))) throw new S3Error('NoSuchBucket', 'The specified bucket does not exist', { BucketName: b });
      const dir = uploadsDir(b);
      const ids = existsSync(dir) ? readdirSync(dir) : [];
      ctx.body = {
        ListMultipartUploadsResult: {
          Bucket: b,
          IsTruncated: false,
          ...(ids.length ? { Upload: ids.map((id) => ({ Key: existsSync(path.join(dir, id, 'key')) ? readFileSync(path.join(dir, id, 'key'), 'utf8') : '', UploadId: id })) } : {}),
        },
      };
      return;
    }
    if (!b || !key || typeof ctx.query.uploadId !== 'string') return next();
    const uploadDir = path.join(uploadsDir(b), path.basename(ctx.query.uploadId));
    if (ctx.method === 'DELETE') {
      if (!existsSync(uploadDir)) throw new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: ctx.query.uploadId });
      rmSync(uploadDir, { recursive: true, force: true });
      ctx.status = 204;
      return;
    }
    if (ctx.method !== 'PUT' || !ctx.query.partNumber) return next();
    const part = Number(ctx.query.partNumber);
    if (!('x-amz-copy-source' in ctx.headers)) {
      await hooks.uploadPart?.(part);
      return next();
    }
    if (!opts.partCopy) return next(); // s3rver: 501 NotImplemented
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      await hooks.partCopy?.(part);
      const [srcBucket, ...srcKey] = decodeURIComponent(String(ctx.headers['x-amz-copy-source'])).replace(/^\//, '').split('/');
      const m = /^bytes=(\d+)-(\d+)$/.exec(String(ctx.headers['x-amz-copy-source-range'] ?? ''));
      if (!m) throw new S3Error('InvalidArgument', 'The x-amz-copy-source-range value must be of the form bytes=first-last.');
      const first = Number(m[1]);
      const last = Number(m[2]);
      if (!existsSync(uploadDir)) throw new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: ctx.query.uploadId });
      const object = await store.getObject(srcBucket, srcKey.join('/'), { start: first, end: last });
      if (!object || !object.content) throw new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: srcKey.join('/') });
      ranges.push({ part, first, last });
      await hooks.partCopyRead?.(part);
      const { md5 } = await store.putPart(b, path.basename(ctx.query.uploadId), part, object.content);
      ctx.body = { CopyPartResult: { LastModified: new Date().toISOString(), ETag: JSON.stringify(md5) } };
    } finally {
      inFlight--;
    }
  };
  // Before s3rver's router (after its XML encoder, so plain objects become XML bodies).
  server.middleware.splice(server.middleware.length - 1, 0, ext);
  const addr = (await server.run()) as { port: number };
  return {
    endpoint: `http://127.0.0.1:${addr.port}`,
    bucket,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    hooks,
    ranges,
    maxInFlight: () => maxInFlight,
    /** Multipart uploads on s3rver's disk (ground truth, whatever the API answers). */
    uploadsOnDisk: (): string[] => (existsSync(uploadsDir(bucket)) ? readdirSync(uploadsDir(bucket)) : []),
    deleteObject: (key: string) => store.deleteObject(bucket, key) as Promise<void>,
    close: () => server.close() as Promise<void>,
  };
}

async function listUploads(storage: S3Storage): Promise<unknown[]> {
  const res = await storage.client.send(new ListMultipartUploadsCommand({ Bucket: storage.cfg.bucket }));
  return res.Uploads ?? [];
}

describe('S3Storage.finalize above the CopyObject limit (stock s3rver)', () => {
  let s3: Awaited<ReturnType<typeof startS3>>;
  before(async () => {
    s3 = await startS3();
  });
  after(() => s3.close());

  it('above the threshold: UploadPartCopy is NotImplemented, the streamed copy is byte-identical, the temporary key is gone', async () => {
    const warnings: string[] = [];
    const { storage, commands } = storageOn(s3, { ...SMALL, log: { warn: (obj, msg) => warnings.push(JSON.stringify({ obj, msg })) } });
    const data = await putRandom(storage, 'a/.tmp-1', BIG);
    commands.length = 0;
    await storage.finalize('a/.tmp-1', 'a/1.tar.gz');
    const sent = commands.splice(0);
    assert.equal(sha256(await read(storage, 'a/1.tar.gz')), sha256(data));
    assert.equal(await storage.size('a/.tmp-1'), null);
    assert.deepEqual(await storage.list('a/'), ['a/1.tar.gz']);
    assert.equal(count(sent, 'CopyObjectCommand'), 0);
    assert.ok(count(sent, 'UploadPartCopyCommand') >= 1, sent.join());
    assert.equal(count(sent, 'AbortMultipartUploadCommand'), 1);
    assert.equal(count(sent, 'GetObjectCommand'), 1);
    assert.ok(count(sent, 'UploadPartCommand') >= 2, 'the fallback streams a multipart upload');
    // s3rver refuses AbortMultipartUpload (405): reported, not fatal, and without the credentials.
    assert.equal(warnings.length, 1);
    assert.ok(!warnings[0].includes(s3.secretAccessKey), warnings[0]);
  });

  it('up to the threshold: one CopyObject, no multipart upload', async () => {
    const { storage, commands } = storageOn(s3);
    const data = await putRandom(storage, 'b/.tmp-2', 3 * MiB);
    commands.length = 0;
    await storage.finalize('b/.tmp-2', 'b/2.dump');
    assert.deepEqual(commands.filter((c) => c !== 'HeadObjectCommand'), ['CopyObjectCommand', 'DeleteObjectCommand']);
    assert.equal(sha256(await read(storage, 'b/2.dump')), sha256(data));
    assert.deepEqual(await storage.list('b/'), ['b/2.dump']);
  });

  it('the default threshold is 5 GiB: a 5 MiB object is copied with CopyObject', async () => {
    const { storage, commands } = storageOn(s3, {});
    await putRandom(storage, 'c/.tmp-3', 5 * MiB + 1);
    commands.length = 0;
    await storage.finalize('c/.tmp-3', 'c/3.dump');
    assert.equal(count(commands, 'CopyObjectCommand'), 1);
    assert.equal(count(commands, 'CreateMultipartUploadCommand'), 0);
  });

  it('a missing source or bucket throws before any multipart upload is created', async () => {
    const { storage, commands } = storageOn(s3);
    await assert.rejects(storage.finalize('d/.tmp-missing', 'd/x.dump'), /does not exist/);
    const other = storageOn(s3, SMALL, 'no-such-bucket');
    await assert.rejects(other.storage.finalize('d/.tmp-missing', 'd/x.dump'));
    for (const list of [commands, other.commands]) {
      assert.deepEqual(
        list.filter((c) => c !== 'HeadObjectCommand'),
        [],
      );
    }
  });
});

describe('S3Storage.finalize above the CopyObject limit (s3rver with UploadPartCopy, ListMultipartUploads, AbortMultipartUpload)', () => {
  let s3: Awaited<ReturnType<typeof startS3Multipart>>;
  let noCopy: Awaited<ReturnType<typeof startS3Multipart>>;
  before(async () => {
    [s3, noCopy] = await Promise.all([startS3Multipart({ partCopy: true }), startS3Multipart({ partCopy: false })]);
  });
  after(async () => {
    await s3.close();
    await noCopy.close();
  });

  it('a multipart copy: contiguous 5 MiB ranges, parts in parallel, ETags in order, byte-identical, nothing left', async () => {
    const { storage, commands } = storageOn(s3);
    const data = await putRandom(storage, 'e/.tmp-4', BIG);
    commands.length = 0;
    s3.ranges.length = 0;
    s3.hooks.partCopy = () => sleep(50);
    try {
      await storage.finalize('e/.tmp-4', 'e/4.tar.gz');
    } finally {
      s3.hooks.partCopy = undefined;
    }
    const sent = commands.splice(0);
    assert.equal(sha256(await read(storage, 'e/4.tar.gz')), sha256(data));
    assert.deepEqual(await storage.list('e/'), ['e/4.tar.gz']);
    assert.equal(count(sent, 'CreateMultipartUploadCommand'), 1);
    assert.equal(count(sent, 'UploadPartCopyCommand'), 4);
    assert.equal(count(sent, 'CompleteMultipartUploadCommand'), 1);
    assert.equal(count(sent, 'CopyObjectCommand') + count(sent, 'GetObjectCommand') + count(sent, 'UploadPartCommand'), 0);
    const sorted = [...s3.ranges].sort((a, b) => a.part - b.part);
    assert.deepEqual(
      sorted.map((r) => [r.part, r.first, r.last]),
      [
        [1, 0, 5 * MiB - 1],
        [2, 5 * MiB, 10 * MiB - 1],
        [3, 10 * MiB, 15 * MiB - 1],
        [4, 15 * MiB, BIG - 1],
      ],
    );
    assert.ok(s3.maxInFlight() >= 2 && s3.maxInFlight() <= 3, `parts in flight: ${s3.maxInFlight()}`);
    assert.deepEqual(await listUploads(storage), []);
    assert.deepEqual(s3.uploadsOnDisk(), []);
  });

  it('UploadPartCopy NotImplemented: the unused upload is aborted and the streamed copy is byte-identical', async () => {
    const warnings: unknown[] = [];
    const { storage, commands } = storageOn(noCopy, { ...SMALL, log: { warn: (o) => warnings.push(o) } });
    const data = await putRandom(storage, 'f/.tmp-5', BIG);
    commands.length = 0;
    await storage.finalize('f/.tmp-5', 'f/5.dump');
    const sent = commands.splice(0);
    assert.equal(sha256(await read(storage, 'f/5.dump')), sha256(data));
    assert.deepEqual(await storage.list('f/'), ['f/5.dump']);
    assert.equal(count(sent, 'AbortMultipartUploadCommand'), 1);
    assert.deepEqual(warnings, []);
    assert.deepEqual(await listUploads(storage), []);
    assert.deepEqual(noCopy.uploadsOnDisk(), []);
  });

  it('the source vanishing in the middle of the copy: throws, waits for the parts in flight, aborts, no upload left', async () => {
    const { storage, commands } = storageOn(s3);
    await putRandom(storage, 'g/.tmp-6', BIG);
    commands.length = 0;
    // Parts 1 and 3 open the source, part 2 then finds it deleted; 1 and 3 are written 300 ms
    // later, so an abort sent before they finish would be undone on s3rver's disk.
    s3.hooks.partCopy = async (part) => {
      if (part !== 2) return;
      await sleep(50);
      await s3.deleteObject('team/g/.tmp-6');
    };
    s3.hooks.partCopyRead = (part) => sleep(part === 2 ? 0 : 300);
    try {
      await assert.rejects(storage.finalize('g/.tmp-6', 'g/6.dump'), (e: Error) => e.name === 'NoSuchKey' || /does not exist/.test(e.message));
    } finally {
      s3.hooks.partCopy = undefined;
      s3.hooks.partCopyRead = undefined;
    }
    await sleep(400); // a part served after the abort would show up on disk now
    assert.equal(count(commands, 'AbortMultipartUploadCommand'), 1);
    assert.equal(count(commands, 'CompleteMultipartUploadCommand'), 0);
    assert.deepEqual(await listUploads(storage), []);
    assert.deepEqual(s3.uploadsOnDisk(), []);
    assert.deepEqual(await storage.list('g/'), []);
  });

  it('a failure of the streamed copy: throws, the upload is aborted, the temporary key is kept intact', async () => {
    const { storage } = storageOn(noCopy);
    const data = await putRandom(storage, 'h/.tmp-7', BIG);
    noCopy.hooks.uploadPart = async (part) => {
      if (part === 2) throw new S3Error('AccessDenied', 'Access Denied');
    };
    try {
      await assert.rejects(storage.finalize('h/.tmp-7', 'h/7.dump'), /Access Denied/);
    } finally {
      noCopy.hooks.uploadPart = undefined;
    }
    assert.deepEqual(await listUploads(storage), []);
    assert.deepEqual(noCopy.uploadsOnDisk(), []);
    assert.deepEqual(await storage.list('h/'), ['h/.tmp-7']);
    assert.equal(sha256(await read(storage, 'h/.tmp-7')), sha256(data));
  });

  it('part sizes grow to stay within 10 000 parts', () => {
    const partSizeFor = S3Storage['partSizeFor'];
    assert.equal(partSizeFor(6 * 1024 * MiB, 512 * MiB), 512 * MiB);
    const fiveTiB = 5 * 1024 * 1024 * MiB;
    const p = partSizeFor(fiveTiB, 512 * MiB);
    assert.ok(Math.ceil(fiveTiB / p) <= 10_000 && p <= 5 * 1024 * MiB, String(p));
    assert.ok(Math.ceil(100 * 1024 * MiB / partSizeFor(100 * 1024 * MiB, 8 * MiB)) <= 10_000);
  });
});
