import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Dispatcher } from 'undici';
import type { FastifyReply } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, invalid } from '../../lib/errors.js';
import { HashCounter } from '../../lib/hash-counter.js';
import type { ProjectRow } from '../projects/index.js';
import { dumpServiceData, loadServiceData, serviceDataLimit, transferFile } from '../services/index.js';
import { fromCloud } from './cloud-copy.js';
import { cloudLink, describeNetworkError, linkRequest, unreachable } from './link.js';
import type { ReportProgress } from './transfer-progress.js';

/**
 * Managed services' data in a transfer with `includeData` (docs/cloud.md, docs/services.md
 * "Transfers"): the sending side dumps each service natively to a file (its sha256 computed), the
 * file is streamed over the link with its sha256, and the receiving side checks the hash and loads it
 * into the service's new instance the way a restore does. Both ends: this file.
 */

const OCTETS = 'application/octet-stream';
export const SERVICE_DATA_TYPES = [OCTETS];

/** Writes a stream to `file`, answering its sha256 and size; past `limit` bytes it stops with 413. */
async function toFile(body: AsyncIterable<Buffer> | Readable, file: string, limit = Infinity, onBytes?: (bytes: number) => void): Promise<{ sha256: string; sizeBytes: number }> {
  const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', `the data is larger than the service can hold (${Math.round(limit / 1024 ** 2)} MB at most: twice its diskMb)`, { field: 'body' });
  const hc = new HashCounter(onBytes, true, { bytes: limit, error: tooLarge });
  await pipeline(body instanceof Readable ? body : Readable.from(body), hc, createWriteStream(file, { mode: 0o600 }));
  return { sha256: hc.digest(), sizeBytes: hc.bytes };
}

/** POST /api/projects/:id/transfer-data/:name (cloud only): the dump of the service `name`, checked against `sha256`, loaded into it. */
export async function receiveServiceData(ctx: AppContext, row: ProjectRow, name: string, body: AsyncIterable<Buffer>, sha256: string): Promise<{ name: string; sha256: string; sizeBytes: number }> {
  // The service first (404 before a byte is written), and what its dump may weigh.
  const limit = await serviceDataLimit(ctx, row.orgId, row.id, name);
  const file = await transferFile(ctx);
  try {
    const got = await toFile(body, file, limit);
    if (got.sha256 !== sha256) throw invalid('sha256', 'the data did not arrive whole: its sha256 does not match');
    await loadServiceData(ctx, row.orgId, row.id, name, file);
    return { name, ...got };
  } finally {
    await rm(file, { force: true }).catch(() => {});
  }
}

/** GET /api/projects/:id/transfer-data/:name (cloud only): a native dump of the running service `name`, its sha256 in X-Berth-Sha256. */
export async function sendServiceData(ctx: AppContext, row: ProjectRow, name: string, reply: FastifyReply): Promise<void> {
  const file = await transferFile(ctx);
  try {
    const { sha256, sizeBytes } = await dumpServiceData(ctx, row.orgId, row.id, name, file);
    reply.header('content-type', OCTETS).header('content-length', String(sizeBytes)).header('x-berth-sha256', sha256);
    await reply.send(createReadStream(file));
  } finally {
    // The file stays open for the answer after it is unlinked.
    await rm(file, { force: true }).catch(() => {});
  }
}

const dataUrl = (base: string, cloudId: string, name: string) => `${base}/api/projects/${encodeURIComponent(cloudId)}/transfer-data/${encodeURIComponent(name)}`;

/** The file's bytes as a stream that tells `onBytes` how many have been read (at most every 250 ms, and at the end). */
function readCounted(file: string, onBytes?: (bytes: number) => void): Readable {
  const source = createReadStream(file);
  if (!onBytes) return source;
  const counter = new HashCounter(onBytes, false);
  source.on('error', (e) => counter.destroy(e));
  return source.pipe(counter);
}

/**
 * to-cloud: dumps the local service `name` and streams it into the cloud copy's service of that name.
 * `report` hears its phases: `dump` (bytes written), `send` (bytes sent of `totalBytes`), `load` (sent
 * whole: the cloud loads it into a fresh instance).
 */
export async function pushServiceData(ctx: AppContext, orgId: string, projectId: string, cloudId: string, name: string, requestId?: string, report?: ReportProgress): Promise<void> {
  const link = cloudLink(ctx)!;
  const file = await transferFile(ctx);
  try {
    report?.({ phase: 'dump', service: name, bytes: 0 });
    const { sha256, sizeBytes } = await dumpServiceData(ctx, orgId, projectId, name, file, undefined, report && ((bytes) => report({ phase: 'dump', service: name, bytes })));
    report?.({ phase: 'send', service: name, bytes: 0, totalBytes: sizeBytes });
    const onSent = report && ((bytes: number) => report(bytes < sizeBytes ? { phase: 'send', service: name, bytes, totalBytes: sizeBytes } : { phase: 'load', service: name, bytes, totalBytes: sizeBytes }));
    let res: Dispatcher.ResponseData;
    try {
      res = await linkRequest(link, `${dataUrl(link.url, cloudId, name)}?sha256=${sha256}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${link.token}`, 'content-type': OCTETS, 'content-length': String(sizeBytes), ...(requestId ? { 'x-request-id': requestId } : {}) },
        body: readCounted(file, onSent),
        signal: AbortSignal.timeout(60 * 60_000),
      });
    } catch (e) {
      throw unreachable(describeNetworkError(e));
    }
    const text = await res.body.text().catch(() => '');
    if (res.statusCode !== 200) throw fromCloud({ status: res.statusCode, body: parse(text) }, `take the data of the service ${name}`);
  } finally {
    await rm(file, { force: true }).catch(() => {});
  }
}

/**
 * to-self-hosted: streams a dump of the cloud copy's service `name` into a local file (sha256 checked);
 * the caller consumes or removes it. `report` hears `dump` (the cloud dumps it) and `receive` (bytes).
 */
export async function pullServiceData(ctx: AppContext, cloudId: string, name: string, requestId?: string, report?: ReportProgress): Promise<string> {
  const link = cloudLink(ctx)!;
  report?.({ phase: 'dump', service: name, bytes: 0 });
  let res: Dispatcher.ResponseData;
  try {
    res = await linkRequest(link, dataUrl(link.url, cloudId, name), {
      method: 'GET',
      headers: { authorization: `Bearer ${link.token}`, ...(requestId ? { 'x-request-id': requestId } : {}) },
      signal: AbortSignal.timeout(60 * 60_000),
    });
  } catch (e) {
    throw unreachable(describeNetworkError(e));
  }
  if (res.statusCode !== 200) {
    const text = await res.body.text().catch(() => '');
    throw fromCloud({ status: res.statusCode, body: parse(text) }, `send the data of the service ${name}`);
  }
  const expected = String(res.headers['x-berth-sha256'] ?? '');
  const total = Number(res.headers['content-length']);
  const totalBytes = Number.isSafeInteger(total) && total >= 0 ? { totalBytes: total } : {};
  report?.({ phase: 'receive', service: name, bytes: 0, ...totalBytes });
  const file = await transferFile(ctx);
  try {
    const got = await toFile(res.body, file, Infinity, report && ((bytes) => report({ phase: 'receive', service: name, bytes, ...totalBytes })));
    if (got.sha256 !== expected) throw unreachable(`the data of the service ${name} did not arrive whole (sha256 mismatch)`);
    return file;
  } catch (e) {
    res.body.destroy();
    await rm(file, { force: true }).catch(() => {});
    if (e instanceof AppError) throw e;
    throw unreachable(`the data of the service ${name} did not arrive whole (${describeNetworkError(e)})`);
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
