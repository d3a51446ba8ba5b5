/**
 * The relay: the upload token of a session (its credential) and receiving its gzipped tarball
 * (counted, hashed and safely extracted as it arrives, within the org's disk allowance).
 */
import { createHash } from 'node:crypto';
import { createWriteStream, promises as fsp, type WriteStream } from 'node:fs';
import path from 'node:path';
import { can } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { safeEqual, sha256Hex } from '../../lib/crypto.js';
import { AppError, conflict, forbidden } from '../../lib/errors.js';
import { clockIso } from '../../lib/clock.js';
import { randomString } from '../../lib/ids.js';
import { ExtractError } from '../../lib/tar/extract-error.js';
import { SafeExtractor } from '../../lib/tar/extractor.js';
import { DEFAULT_LIMITS } from '../../lib/tar/limits.js';
import { projectAuthz, projectQueries } from '../projects/index.js';
import { MAX_UPLOAD_BYTES, stagedDir, UPLOAD_CONTENT_TYPES, UPLOAD_TOKEN_HEADER, UPLOADED_TTL_MS, uploadsRoot, type Deps } from './upload-layout.js';
import { orgFull, othersInFlight, REPORT_EVERY_BYTES, REPORT_EVERY_MS } from './upload-quota.js';
import * as store from './uploads.store.js';
import type { UploadSessionRow } from './uploads.store.js';

export interface UploadAnswer {
  sessionId: string;
  status: 'uploaded';
  sizeBytes: number;
  sha256: string;
  files: number;
  directories: number;
  skipped: { path: string; type: string }[];
  expiresAt: string;
}

const badToken = () => new AppError('UNAUTHENTICATED', `invalid or expired upload token: send the headers the session answered (${UPLOAD_TOKEN_HEADER})`);

/**
 * Checks the upload token of a session (constant time). The token is the credential of the relay:
 * it was minted by a project:write caller for this one session, lives an hour and uploads once.
 * The session's creator must still be a member of the org with project:write (on the session's
 * project when it names one).
 */
export async function authenticateUpload(ctx: AppContext, sessionId: string, token: string | undefined): Promise<UploadSessionRow> {
  const row = await store.findSessionForToken(ctx.db, sessionId);
  // Always compare, so an unknown session costs the same as a wrong token.
  const ok = safeEqual(sha256Hex(token ?? ''), row?.tokenHash ?? sha256Hex(randomString(16))) && !!token && !!row;
  if (!ok || !row) throw badToken();
  if (row.expiresAt <= clockIso(ctx.clock)) throw badToken();
  // The creator's rights now, not when the session was opened: a member removed since is refused
  // like a bad token; one whose role or grants no longer allow project:write gets 403.
  const creator = await ctx.ports.auth.memberActor(ctx, row.orgId, row.createdBy);
  if (!creator) throw badToken();
  const project = row.projectId ? await projectQueries.findProject(ctx.db, row.orgId, row.projectId) : undefined;
  if (row.projectId ? !project || !can(creator, 'project:write', projectAuthz.ref(project)) : !can(creator, 'project:write')) {
    throw forbidden('the member who opened this upload session may no longer write this project (project:write)');
  }
  if (row.status === 'uploaded' || row.status === 'consumed') throw conflict('this session already holds an upload: open a new session');
  if (row.status === 'uploading') throw conflict('an upload to this session is in progress');
  return row;
}

/** Only gzipped tarballs (Fastify itself parses JSON and text bodies, so check here too). */
export function checkContentType(header: string | undefined): void {
  const type = String(header ?? '').split(';')[0]!.trim().toLowerCase();
  if (!UPLOAD_CONTENT_TYPES.includes(type)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `send the tarball as application/gzip (got ${type || 'no content type'})`);
  }
}

/** Refuses a declared Content-Length above the limit before a byte is read. */
export function checkDeclaredLength(contentLength: string | undefined): void {
  if (contentLength === undefined) return;
  const n = Number(contentLength);
  if (Number.isFinite(n) && n > MAX_UPLOAD_BYTES) throw tooLarge();
}

const tooLarge = () => new AppError('PAYLOAD_TOO_LARGE', `uploads are limited to ${MAX_UPLOAD_BYTES} bytes (300 MB): nothing was kept`);

function closeStream(ws: WriteStream): Promise<void> {
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.end(() => resolve());
  });
}

/** Moves a received upload (archive and extracted files) to its staged place and records it uploaded. */
async function stageUpload(ctx: Deps, row: UploadSessionRow, tmp: string, size: number, sha256: string, out: Awaited<ReturnType<SafeExtractor['end']>>): Promise<UploadAnswer> {
  const staged = stagedDir(ctx, row.id);
  await fsp.rm(staged, { recursive: true, force: true });
  await fsp.mkdir(path.dirname(staged), { recursive: true });
  await fsp.rename(tmp, staged);
  const uploadedAt = clockIso(ctx.clock);
  const expiresAt = clockIso(ctx.clock, UPLOADED_TTL_MS);
  await store.markUploaded(ctx.db, row.orgId, row.id, { sizeBytes: size, sha256, files: out.files, uploadedAt, expiresAt, storedBytes: size + out.bytes });
  return { sessionId: row.id, status: 'uploaded', sizeBytes: size, sha256, files: out.files, directories: out.directories, skipped: out.skipped, expiresAt };
}

/**
 * Receives the gzipped tarball of an authenticated session: writes it to disk while counting and
 * hashing, and extracts it as it arrives (safe extraction into a fresh directory). Any failure
 * removes everything written and puts the session back to `open`. Throws 413 the moment the count
 * passes the limit (the caller then closes the connection), 400 for a hostile or corrupt archive.
 */
export async function receiveUpload(ctx: Deps, row: UploadSessionRow, body: AsyncIterable<Buffer | string> | Iterable<Buffer>): Promise<UploadAnswer> {
  // The org's allowance of disk for uploads not deployed yet: what received uploads hold, and what
  // the others in flight here hold now. The extractor refuses a file that would pass it before a
  // byte of the file is written; the loop below counts the archive too.
  const cap = ctx.config.hardening.uploads.maxOrgBytes;
  const { inFlight } = ctx.state.uploads;
  const stored = await store.storedBytesOfOrg(ctx.db, row.orgId, clockIso(ctx.clock));
  // Other instances' uploads of the org in flight (the database, refreshed with each report below).
  // Only PostgreSQL is shared by several instances: on SQLite there are none, and nothing is reported.
  const shared = ctx.dialect === 'postgres';
  let elsewhere = await othersInFlight(ctx, ctx.db, row.orgId, row.id);
  const budget = () => cap - stored.bytes - inFlight.of(row.orgId, row.id) - elsewhere;
  if (budget() <= 0) throw orgFull(cap, stored.soonest, ctx.clock.now());
  if (!(await store.claimForUpload(ctx.db, row.orgId, row.id, clockIso(ctx.clock)))) throw conflict('an upload to this session is in progress or finished');
  const fileCap = Math.min(DEFAULT_LIMITS.maxBytes, budget());
  inFlight.set(row.orgId, row.id, 0);
  let reported = { bytes: 0, at: Date.now() };
  if (shared) await store.reportInFlight(ctx.db, row.orgId, row.id, ctx.instanceId, 0, clockIso(ctx.clock));
  /** Says what this upload holds now, and reads what the other instances' ones hold. */
  const report = async (bytes: number) => {
    reported = { bytes, at: Date.now() };
    await store.reportInFlight(ctx.db, row.orgId, row.id, ctx.instanceId, bytes, clockIso(ctx.clock));
    elsewhere = await othersInFlight(ctx, ctx.db, row.orgId, row.id);
  };
  const root = uploadsRoot(ctx);
  const tmp = path.join(root, '.tmp', `${path.basename(row.id)}-${randomString(8)}`);
  const src = path.join(tmp, 'src');
  let archive: WriteStream | undefined;
  let extractor: SafeExtractor | undefined;
  try {
    await fsp.mkdir(src, { recursive: true, mode: 0o700 });
    archive = createWriteStream(path.join(tmp, 'source.tar.gz'), { flags: 'wx', mode: 0o600 });
    const archiveError = new Promise<never>((_, reject) => archive!.once('error', reject));
    archiveError.catch(() => {});
    extractor = new SafeExtractor(src, { ...DEFAULT_LIMITS, maxBytes: fileCap });
    const hash = createHash('sha256');
    let size = 0;
    for await (const raw of body) {
      const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
      size += chunk.length;
      if (size > MAX_UPLOAD_BYTES) throw tooLarge();
      hash.update(chunk);
      archive.write(chunk);
      await extractor.write(chunk);
      const onDisk = size + extractor.committedBytes;
      inFlight.set(row.orgId, row.id, onDisk);
      if (shared && (onDisk - reported.bytes >= REPORT_EVERY_BYTES || Date.now() - reported.at >= REPORT_EVERY_MS)) await report(onDisk);
      if (onDisk > budget()) throw orgFull(cap, stored.soonest, ctx.clock.now());
      if (archive.writableNeedDrain) await Promise.race([new Promise<void>((r) => archive!.once('drain', () => r())), archiveError]);
    }
    const out = await extractor.end();
    await closeStream(archive);
    // Again against the database: an upload of the org that finished meanwhile is counted there now.
    const latest = await store.storedBytesOfOrg(ctx.db, row.orgId, clockIso(ctx.clock));
    elsewhere = await othersInFlight(ctx, ctx.db, row.orgId, row.id);
    if (size + out.bytes > cap - latest.bytes - inFlight.of(row.orgId, row.id) - elsewhere) throw orgFull(cap, latest.soonest, ctx.clock.now());
    return await stageUpload(ctx, row, tmp, size, hash.digest('hex'), out);
  } catch (e) {
    const committed = extractor?.committedBytes ?? 0;
    extractor?.abort();
    archive?.destroy();
    await fsp.rm(tmp, { recursive: true, force: true }).catch(() => {});
    await store.releaseUpload(ctx.db, row.orgId, row.id).catch(() => {});
    // The extractor's byte cap was the org's allowance, not the per-upload limit: a quota refusal.
    if (e instanceof ExtractError && e.kind === 'limit' && fileCap < DEFAULT_LIMITS.maxBytes && committed > fileCap) throw orgFull(cap, stored.soonest, ctx.clock.now());
    if (e instanceof ExtractError) {
      const what = e.kind === 'hostile' ? 'refused a hostile archive' : e.kind === 'limit' ? 'refused an archive over the limits' : 'could not read the archive';
      throw new AppError('VALIDATION_FAILED', `${what}: ${e.message}; nothing was kept`, { field: 'body' });
    }
    throw e;
  } finally {
    inFlight.set(row.orgId, row.id, null);
  }
}
