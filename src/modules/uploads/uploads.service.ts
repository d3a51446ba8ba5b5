/**
 * Folder uploads: sessions, the relay's receive-and-extract, scans, attaching an upload to a project
 * as its source, and the sweep of expired sessions. 
 * (local.service.ts holds the local-folder routes' logic).
 *
 * Disk layout under `<dataDir>/uploads/`:
 *   .tmp/<sessionId>-<rand>/            an upload in flight (archive + extracted tree); removed on any failure
 *   .sessions/<sessionId>/src/          an upload received and extracted, waiting for ensure
 *   .sessions/<sessionId>/source.tar.gz the archive as received (sha256 in the session row)
 *   <projectId>/current/                the project's current uploaded source (what the next build copies)
 *   <projectId>/source.tar.gz           its archive;  <projectId>/source.json  { sessionId, sha256, sizeBytes, files, attachedAt }
 */
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, promises as fsp, type WriteStream } from 'node:fs';
import path from 'node:path';
import type { Actor } from '../../authz/actor.js';
import { authorize, can } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { transaction, type Db } from '../../db/client.js';
import type { ResolvedResource } from '../../http/route.js';
import { AppError, conflict, forbidden } from '../../lib/errors.js';
import { safeEqual, sha256Hex } from '../../lib/crypto.js';
import { isoPlus, newId, newSecretToken, nowIso, randomString } from '../../lib/ids.js';
import { ExtractError } from '../../lib/tar/extract-error.js';
import { SafeExtractor } from '../../lib/tar/extractor.js';
import { DEFAULT_LIMITS } from '../../lib/tar/limits.js';
import { scanProject, type ScanResult } from '../detect/detect.js';
import { insertAuditEvent } from '../audit/audit.store.js';
import { memberActor } from '../auth/auth.service.js';
import type { EnsureInput, ProjectRecord } from '../projects/projects.service.js';
import { findProject, projectRef, updateProject } from '../projects/projects.store.js';
import * as store from './uploads.store.js';
import type { UploadSessionRow } from './uploads.store.js';

/** The relay's limit (seed: 300 MB), in bytes. */
export const MAX_UPLOAD_BYTES = 300 * 1000 * 1000;
/** Time to upload after opening a session. */
export const SESSION_TTL_MS = 60 * 60 * 1000;
/** Time to scan and ensure after the upload arrived; then the sweep removes it (contract section 17). */
export const UPLOADED_TTL_MS = 60 * 60 * 1000;
/** How often the sweep runs: an expired upload's files are gone within a minute of its expiry. */
export const SWEEP_EVERY_MS = 60 * 1000;
export const UPLOAD_TOKEN_HEADER = 'x-berth-upload-token';
export const UPLOAD_CONTENT_TYPES = ['application/gzip', 'application/x-gzip', 'application/octet-stream'];

type Deps = Pick<AppContext, 'db' | 'config' | 'log'>;

export function uploadsRoot(ctx: Pick<AppContext, 'config'>): string {
  return path.join(ctx.config.dataDir, 'uploads');
}
/** Seconds until `iso` (at least 1, at most an hour): the Retry-After of a quota refusal. */
function retryAfter(iso: string | null): number {
  const ms = iso ? Date.parse(iso) - Date.now() : SESSION_TTL_MS;
  return Math.min(3600, Math.max(1, Math.ceil(ms / 1000)));
}

const MiB = 1024 * 1024;
const fmtBytes = (n: number) => (n >= 1024 * MiB ? `${(n / (1024 * MiB)).toFixed(2)} GiB` : `${(n / MiB).toFixed(1)} MiB`);

/** 429: the org's received, unconsumed uploads hold its whole allowance of disk. */
function orgFull(cap: number, soonest: string | null): AppError {
  return new AppError(
    'RATE_LIMITED',
    `this organization's uploads that are not deployed yet hold ${fmtBytes(cap)} or more of disk (the limit); deploy them or wait until they expire`,
    { retryAfterSeconds: retryAfter(soonest) },
  );
}

/**
 * Bytes on disk of uploads in flight on this instance, per org and session (received archive bytes
 * plus extracted file bytes); received uploads are counted from the database (`storedBytes`).
 */
const inFlightBytes = new Map<string, Map<string, number>>();

function inFlightOf(orgId: string, except?: string): number {
  let n = 0;
  for (const [id, b] of inFlightBytes.get(orgId) ?? []) if (id !== except) n += b;
  return n;
}

function setInFlight(orgId: string, sessionId: string, bytes: number | null): void {
  let m = inFlightBytes.get(orgId);
  if (bytes === null) {
    m?.delete(sessionId);
    if (m && m.size === 0) inFlightBytes.delete(orgId);
    return;
  }
  if (!m) inFlightBytes.set(orgId, (m = new Map()));
  m.set(sessionId, bytes);
}

const stagedDir = (ctx: Pick<AppContext, 'config'>, sessionId: string) => path.join(uploadsRoot(ctx), '.sessions', path.basename(sessionId));
const projectDir = (ctx: Pick<AppContext, 'config'>, projectId: string) => path.join(uploadsRoot(ctx), path.basename(projectId));

// ---------------------------------------------------------------- sessions

export interface SessionAnswer {
  sessionId: string;
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  expiresAt: string;
  maxBytes: number;
}

/**
 * Opens a session. Creating projects needs project:write on the org; naming `projectId` needs
 * project:write on that project (another org's or a missing id is 404), and a project that lives on
 * the cloud is refused (409) unless `allowCloudProject` (the transfer back from the cloud).
 */
export async function createSession(
  ctx: AppContext,
  actor: Actor,
  input: { name?: string; projectId?: string; sizeBytes?: number },
  opts: { allowCloudProject?: boolean } = {},
): Promise<SessionAnswer> {
  if (input.projectId) {
    const row = await findProject(ctx.db, actor.orgId, input.projectId);
    authorize(actor, 'project:write', row ? projectRef(row) : null, 'project');
    // (A transfer back from the cloud receives the source into the record before it flips it.)
    if (row!.location === 'cloud' && !opts.allowCloudProject) {
      throw conflict('this project lives on the cloud: open the upload session on the cloud, or move the project back first', 'projectId');
    }
  } else if (!can(actor, 'project:write')) {
    throw forbidden('you do not have permission to create projects (project:write)');
  }
  if (input.sizeBytes !== undefined && input.sizeBytes > MAX_UPLOAD_BYTES) {
    throw new AppError('PAYLOAD_TOO_LARGE', `uploads are limited to ${MAX_UPLOAD_BYTES} bytes (300 MB); this one is ${input.sizeBytes}`, { field: 'sizeBytes' });
  }
  const id = newId('upl');
  const token = newSecretToken('berth_upl');
  const now = nowIso();
  const expiresAt = isoPlus(SESSION_TTL_MS);
  const limits = ctx.config.hardening.uploads;
  await transaction(ctx.db, async (tx) => {
    // Quotas (contract section 17): open sessions per user, stored unconsumed bytes per org. On
    // PostgreSQL the user's row is locked so that concurrent opens are counted one after another
    // (SQLite has a single writer).
    if (ctx.dialect === 'postgres') await tx.selectFrom('users').select('id').where('id', '=', actor.userId).forUpdate().execute();
    const open = await store.openSessionsOfUser(tx, actor.userId, now);
    if (open.n >= limits.maxOpenSessionsPerUser) {
      throw new AppError('RATE_LIMITED', `you have ${open.n} open upload sessions (at most ${limits.maxOpenSessionsPerUser}); use them or let them expire first`, {
        retryAfterSeconds: retryAfter(open.soonest),
      });
    }
    const stored = await store.storedBytesOfOrg(tx, actor.orgId, now);
    if (stored.bytes + inFlightOf(actor.orgId) >= limits.maxOrgBytes) throw orgFull(limits.maxOrgBytes, stored.soonest);
    await store.insertSession(tx, {
      id,
      orgId: actor.orgId,
      createdBy: actor.userId,
      projectId: input.projectId ?? null,
      name: input.name?.trim() || null,
      sizeHint: input.sizeBytes ?? null,
      tokenHash: sha256Hex(token),
      status: 'open',
      sizeBytes: null,
      sha256: null,
      files: null,
      scan: null,
      createdAt: now,
      expiresAt,
      uploadedAt: null,
      consumedAt: null,
    });
    await insertAuditEvent(tx, { orgId: actor.orgId, actorId: actor.userId, action: 'upload.session', resourceType: 'upload_session', resourceId: id, details: { projectId: input.projectId ?? null } });
  });
  return {
    sessionId: id,
    // The relay is self-hosted only; a cloud instance's target is its own upload route (cloud area).
    url: ctx.config.mode === 'cloud' ? `${ctx.publicUrl()}/api/uploads/${id}` : `${ctx.publicUrl()}/api/projects/folder/upload/${id}`,
    method: 'POST',
    headers: { 'content-type': 'application/gzip', [UPLOAD_TOKEN_HEADER]: token },
    expiresAt,
    maxBytes: MAX_UPLOAD_BYTES,
  };
}

/** Resolver of kind `upload_session`: a session of the org; a grant on its project covers it. */
export async function resolveSession(ctx: AppContext, orgId: string, id: string): Promise<ResolvedResource | null> {
  const row = await store.findSession(ctx.db, orgId, id);
  if (!row) return null;
  return { kind: 'upload_session', id: row.id, orgId: row.orgId, grantKeys: row.projectId ? [{ type: 'project', id: row.projectId }] : [], record: row };
}

// ---------------------------------------------------------------- the relay

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
export async function authenticateUpload(ctx: Deps, sessionId: string, token: string | undefined): Promise<UploadSessionRow> {
  const row = await store.findSessionForToken(ctx.db, sessionId);
  // Always compare, so an unknown session costs the same as a wrong token.
  const ok = safeEqual(sha256Hex(token ?? ''), row?.tokenHash ?? sha256Hex(randomString(16))) && !!token && !!row;
  if (!ok || !row) throw badToken();
  if (row.expiresAt <= nowIso()) throw badToken();
  // The creator's rights now, not when the session was opened: a member removed since is refused
  // like a bad token; one whose role or grants no longer allow project:write gets 403.
  const creator = await memberActor(ctx, row.orgId, row.createdBy);
  if (!creator) throw badToken();
  const project = row.projectId ? await findProject(ctx.db, row.orgId, row.projectId) : undefined;
  if (row.projectId ? !project || !can(creator, 'project:write', projectRef(project)) : !can(creator, 'project:write')) {
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
  const stored = await store.storedBytesOfOrg(ctx.db, row.orgId, nowIso());
  const budget = () => cap - stored.bytes - inFlightOf(row.orgId, row.id);
  if (budget() <= 0) throw orgFull(cap, stored.soonest);
  if (!(await store.claimForUpload(ctx.db, row.orgId, row.id, nowIso()))) throw conflict('an upload to this session is in progress or finished');
  const fileCap = Math.min(DEFAULT_LIMITS.maxBytes, budget());
  setInFlight(row.orgId, row.id, 0);
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
      setInFlight(row.orgId, row.id, onDisk);
      if (onDisk > budget()) throw orgFull(cap, stored.soonest);
      if (archive.writableNeedDrain) await Promise.race([new Promise<void>((r) => archive!.once('drain', () => r())), archiveError]);
    }
    const out = await extractor.end();
    await closeStream(archive);
    // Again against the database: an upload of the org that finished meanwhile is counted there now.
    const latest = await store.storedBytesOfOrg(ctx.db, row.orgId, nowIso());
    if (size + out.bytes > cap - latest.bytes - inFlightOf(row.orgId, row.id)) throw orgFull(cap, latest.soonest);
    const staged = stagedDir(ctx, row.id);
    await fsp.rm(staged, { recursive: true, force: true });
    await fsp.mkdir(path.dirname(staged), { recursive: true });
    await fsp.rename(tmp, staged);
    const uploadedAt = nowIso();
    const expiresAt = isoPlus(UPLOADED_TTL_MS);
    const sha256 = hash.digest('hex');
    await store.markUploaded(ctx.db, row.orgId, row.id, { sizeBytes: size, sha256, files: out.files, uploadedAt, expiresAt, storedBytes: size + out.bytes });
    return { sessionId: row.id, status: 'uploaded', sizeBytes: size, sha256, files: out.files, directories: out.directories, skipped: out.skipped, expiresAt };
  } catch (e) {
    const committed = extractor?.committedBytes ?? 0;
    extractor?.abort();
    archive?.destroy();
    await fsp.rm(tmp, { recursive: true, force: true }).catch(() => {});
    await store.releaseUpload(ctx.db, row.orgId, row.id).catch(() => {});
    // The extractor's byte cap was the org's allowance, not the per-upload limit: a quota refusal.
    if (e instanceof ExtractError && e.kind === 'limit' && fileCap < DEFAULT_LIMITS.maxBytes && committed > fileCap) throw orgFull(cap, stored.soonest);
    if (e instanceof ExtractError) {
      const what = e.kind === 'hostile' ? 'refused a hostile archive' : e.kind === 'limit' ? 'refused an archive over the limits' : 'could not read the archive';
      throw new AppError('VALIDATION_FAILED', `${what}: ${e.message}; nothing was kept`, { field: 'body' });
    }
    throw e;
  } finally {
    setInFlight(row.orgId, row.id, null);
  }
}

// ---------------------------------------------------------------- scan

export type ScanAnswer = ScanResult;

/** The folder a session's upload lives in (staged, or the project's current source once consumed). */
function sessionSourceDir(ctx: Deps, row: UploadSessionRow): string {
  if (row.status === 'uploaded') return path.join(stagedDir(ctx, row.id), 'src');
  if (row.status === 'consumed' && row.projectId) return path.join(projectDir(ctx, row.projectId), 'current');
  throw conflict(row.status === 'uploading' ? 'the upload is still in progress' : 'nothing was uploaded to this session yet');
}

export async function scanSession(ctx: Deps, row: UploadSessionRow): Promise<ScanAnswer> {
  if (row.status === 'uploaded' && row.expiresAt <= nowIso()) throw conflict('this upload session has expired: upload again');
  if (row.status === 'consumed' && row.projectId) await materialize(ctx, row.orgId, row.projectId);
  const dir = sessionSourceDir(ctx, row);
  if (!existsSync(dir)) throw conflict('the uploaded files are gone (the session was swept): upload again');
  const result = scanProject(dir);
  await store.saveScan(ctx.db, row.orgId, row.id, JSON.stringify(result));
  return result;
}

// ---------------------------------------------------------------- attach (ensure with sessionId)

/**
 * Checks, before a project is created or changed, that `sessionId` names an upload of the org that
 * is ready to become a project's source (so a bad id leaves nothing half-made).
 */
export async function checkUploadSession(db: Db, orgId: string, sessionId: string): Promise<void> {
  const row = await store.findSession(db, orgId, sessionId);
  if (!row) throw new AppError('NOT_FOUND', 'upload session not found', { field: 'sessionId' });
  if (row.status === 'consumed') throw conflict('this upload is already the source of a project: open a new session', 'sessionId');
  if (row.status !== 'uploaded') throw conflict('nothing was uploaded to this session yet', 'sessionId');
  if (row.expiresAt <= nowIso()) throw conflict('this upload session has expired: upload again', 'sessionId');
}

const CONFIG_FROM_SCAN = ['framework', 'installCommand', 'buildCommand', 'startCommand', 'outputDirectory', 'rootDirectory', 'packageManager', 'runtime'] as const;

/**
 * Makes the upload of `sessionId` the source of `projectId` (the next deployment builds it, and every
 * later one until another upload replaces it) and consumes the session. Config fields the project
 * leaves empty are filled from the scan of the upload. Then the files are moved to
 * `<dataDir>/uploads/<projectId>/current`.
 */
export async function attachUploadToProject(ctx: Deps, actorId: string | null, orgId: string, projectId: string, sessionId: string): Promise<void> {
  await transaction(ctx.db, async (tx) => {
    const row = await store.findSession(tx, orgId, sessionId);
    const project = await findProject(tx, orgId, projectId);
    if (!row || !project) throw new AppError('NOT_FOUND', 'upload session not found', { field: 'sessionId' });
    if (!(await store.consume(tx, orgId, sessionId, projectId, nowIso()))) throw conflict('this upload is no longer available (consumed or expired): upload again', 'sessionId');
    let scan: ScanResult | null = null;
    try {
      scan = row.scan ? (JSON.parse(row.scan) as ScanResult) : scanProject(path.join(stagedDir(ctx, sessionId), 'src'));
    } catch {
      scan = null;
    }
    const patch: Record<string, unknown> = { sourceType: 'upload', gitProvider: 'upload', updatedAt: nowIso() };
    if (scan) {
      const unconfigured = !project.framework && !project.startCommand && !project.buildCommand;
      for (const k of CONFIG_FROM_SCAN) {
        const v = (scan as unknown as Record<string, unknown>)[k];
        if ((project as Record<string, unknown>)[k] == null && typeof v === 'string' && v !== '') patch[k] = v;
      }
      if (unconfigured && typeof scan.port === 'number') patch.port = scan.port;
    }
    await updateProject(tx, orgId, projectId, patch);
    await insertAuditEvent(tx, { orgId, actorId, action: 'upload.attach', resourceType: 'project', resourceId: projectId, details: { sessionId, sha256: row.sha256, sizeBytes: row.sizeBytes } });
  });
  await materialize(ctx, orgId, projectId);
}

/**
 * Moves the project's latest consumed upload into `<projectId>/current` if it is not there yet
 * (idempotent: attach calls it after its commit; scans and the sweep repair an interrupted move).
 */
async function materialize(ctx: Deps, orgId: string, projectId: string): Promise<void> {
  const row = await store.currentForProject(ctx.db, orgId, projectId);
  if (!row) return;
  const staged = stagedDir(ctx, row.id);
  if (!existsSync(path.join(staged, 'src'))) return;
  const dir = projectDir(ctx, projectId);
  await fsp.mkdir(dir, { recursive: true });
  const old = path.join(dir, `.old-${randomString(8)}`);
  const current = path.join(dir, 'current');
  if (existsSync(current)) await fsp.rename(current, old);
  await fsp.rename(path.join(staged, 'src'), current);
  await fsp.rm(path.join(dir, 'source.tar.gz'), { force: true });
  await fsp.rename(path.join(staged, 'source.tar.gz'), path.join(dir, 'source.tar.gz')).catch(() => {});
  const meta = { sessionId: row.id, sha256: row.sha256, sizeBytes: row.sizeBytes, files: row.files, attachedAt: row.consumedAt };
  await fsp.writeFile(path.join(dir, 'source.json'), JSON.stringify(meta, null, 2) + '\n');
  await fsp.rm(staged, { recursive: true, force: true });
  await fsp.rm(old, { recursive: true, force: true });
}

/**
 * For the build pipeline: the folder holding the project's current uploaded source
 * (`<dataDir>/uploads/<projectId>/current`), or null when the project has none. Copy it; never build in it.
 */
export async function uploadSourceDir(ctx: Deps, orgId: string, projectId: string): Promise<string | null> {
  await materialize(ctx, orgId, projectId);
  const current = path.join(projectDir(ctx, projectId), 'current');
  return (await store.currentForProject(ctx.db, orgId, projectId)) && existsSync(current) ? current : null;
}

// ---------------------------------------------------------------- sweep

/**
 * Removes expired sessions that never became a source (rows and files), history rows of sources
 * that a newer upload replaced, and leftovers of interrupted uploads. Runs on the scheduler.
 */
export async function sweepUploads(ctx: Deps, now = Date.now()): Promise<{ expired: number; superseded: number; leftovers: number }> {
  const nowS = new Date(now).toISOString();
  let expired = 0;
  for (const s of await store.listExpired(ctx.db, nowS)) {
    await fsp.rm(stagedDir(ctx, s.id), { recursive: true, force: true });
    await store.deleteSession(ctx.db, s.orgId, s.id);
    expired++;
  }
  const superseded = await store.deleteSuperseded(ctx.db, new Date(now - 24 * 3600 * 1000).toISOString());
  let leftovers = 0;
  const root = uploadsRoot(ctx);
  // Uploads in flight live in .tmp; one older than the session lifetime was interrupted by a crash.
  for (const name of await fsp.readdir(path.join(root, '.tmp')).catch(() => [] as string[])) {
    const p = path.join(root, '.tmp', name);
    const st = await fsp.stat(p).catch(() => null);
    if (st && now - st.mtimeMs > SESSION_TTL_MS + 60_000) {
      await fsp.rm(p, { recursive: true, force: true });
      leftovers++;
    }
  }
  const staged = await fsp.readdir(path.join(root, '.sessions')).catch(() => [] as string[]);
  const known = await store.knownSessionIds(ctx.db, staged);
  for (const name of staged) {
    if (!known.has(name)) {
      await fsp.rm(path.join(root, '.sessions', name), { recursive: true, force: true });
      leftovers++;
    }
  }
  if (expired || superseded || leftovers) ctx.log.info({ expired, superseded, leftovers }, 'upload sweep');
  return { expired, superseded, leftovers };
}

// ---------------------------------------------------------------- ensure with sessionId

/**
 * POST /api/projects/ensure with `sessionId` (called by the projects service): checks the upload
 * first (a bad id leaves nothing half-made), creates or updates the project through `ensure` with
 * `gitProvider: "upload"`, then makes the upload its source and consumes the session.
 */
export async function ensureWithUpload(
  ctx: AppContext,
  actor: Actor,
  input: EnsureInput & { sessionId: string },
  ensure: (ctx: AppContext, actor: Actor, input: EnsureInput) => Promise<{ project: ProjectRecord; created: boolean }>,
): Promise<{ project: ProjectRecord; created: boolean }> {
  const { sessionId, ...rest } = input;
  await checkUploadSession(ctx.db, actor.orgId, sessionId);
  const out = await ensure(ctx, actor, { ...rest, gitProvider: 'upload' });
  await attachUploadToProject(ctx, actor.userId, actor.orgId, out.project.id, sessionId);
  // Loaded lazily: the projects service imports this module.
  const { loadRecord } = await import('../projects/projects.service.js');
  return { project: await loadRecord(ctx, ctx.db, actor.orgId, out.project.id), created: out.created };
}
