/**
 * An upload as a project's source: scanning it, checking and attaching it to a project (the session
 * is consumed), moving it into `<projectId>/current`, and handing that folder to the build.
 */
import { existsSync, promises as fsp } from 'node:fs';
import path from 'node:path';
import { transaction, type Db } from '../../db/client.js';
import { sql } from '../../db/kysely.js';
import { serialOf } from '../../db/serial.js';
import { AppError, conflict } from '../../lib/errors.js';
import { clockIso } from '../../lib/clock.js';
import { randomString } from '../../lib/ids.js';
import { scanProject, type ScanResult } from '../detect/index.js';
import { insertAuditEvent } from '../audit/index.js';
import { projectQueries, useUploadAsSource } from '../projects/index.js';
import { projectDir, stagedDir, type Deps } from './upload-layout.js';
import * as store from './uploads.store.js';
import type { UploadSessionRow } from './uploads.store.js';

export type ScanAnswer = ScanResult;

/** The folder a session's upload lives in (staged, or the project's current source once consumed). */
function sessionSourceDir(ctx: Deps, row: UploadSessionRow): string {
  if (row.status === 'uploaded') return path.join(stagedDir(ctx, row.id), 'src');
  if (row.status === 'consumed' && row.projectId) return path.join(projectDir(ctx, row.projectId), 'current');
  throw conflict(row.status === 'uploading' ? 'the upload is still in progress' : 'nothing was uploaded to this session yet');
}

export async function scanSession(ctx: Deps, row: UploadSessionRow): Promise<ScanAnswer> {
  if (row.status === 'uploaded' && row.expiresAt <= clockIso(ctx.clock)) throw conflict('this upload session has expired: upload again');
  if (row.status === 'consumed' && row.projectId) await materialize(ctx, row.orgId, row.projectId);
  const dir = sessionSourceDir(ctx, row);
  if (!existsSync(dir)) throw conflict('the uploaded files are gone (the session was swept): upload again');
  const result = scanProject(dir);
  await store.saveScan(ctx.db, row.orgId, row.id, JSON.stringify(result));
  return result;
}

/**
 * Checks, before a project is created or changed, that `sessionId` names an upload of the org that
 * is ready to become a project's source (so a bad id leaves nothing half-made). An upload a project
 * already consumed and still builds from answers `{ attachedTo }` (contract section 12: ensure and
 * the deployments API given the same session again are no-ops for the upload); the caller refuses it
 * when that is not the project it means. One that a newer upload replaced stays 409.
 */
export async function checkUploadSession({ db, clock }: Pick<Deps, 'db' | 'clock'>, orgId: string, sessionId: string): Promise<{ attachedTo: string | null }> {
  const row = await store.findSession(db, orgId, sessionId);
  if (!row) throw new AppError('NOT_FOUND', 'upload session not found', { field: 'sessionId' });
  if (row.status === 'consumed') {
    const current = row.projectId ? await store.currentForProject(db, orgId, row.projectId) : undefined;
    if (row.projectId && current?.id === row.id) return { attachedTo: row.projectId };
    throw conflict('this upload is already the source of a project: open a new session', 'sessionId');
  }
  if (row.status !== 'uploaded') throw conflict('nothing was uploaded to this session yet', 'sessionId');
  if (row.expiresAt <= clockIso(clock)) throw conflict('this upload session has expired: upload again', 'sessionId');
  return { attachedTo: null };
}

/**
 * Makes the upload of `sessionId` the source of `projectId` (the next deployment builds it, and every
 * later one until another upload replaces it) and consumes the session. Config fields the project
 * leaves empty are filled from the scan of the upload (the projects area's `useUploadAsSource`).
 * Then the files are moved to `<dataDir>/uploads/<projectId>/current`.
 */
export async function attachUploadToProject(ctx: Deps, actorId: string | null, orgId: string, projectId: string, sessionId: string): Promise<void> {
  await transaction(ctx.db, async (tx) => {
    const row = await store.findSession(tx, orgId, sessionId);
    const project = await projectQueries.findProject(tx, orgId, projectId);
    if (!row || !project) throw new AppError('NOT_FOUND', 'upload session not found', { field: 'sessionId' });
    if (!(await store.consume(tx, orgId, sessionId, projectId, clockIso(ctx.clock)))) throw conflict('this upload is no longer available (consumed or expired): upload again', 'sessionId');
    let scan: ScanResult | null = null;
    try {
      scan = row.scan ? (JSON.parse(row.scan) as ScanResult) : scanProject(path.join(stagedDir(ctx, sessionId), 'src'));
    } catch {
      scan = null;
    }
    await useUploadAsSource(tx, project, scan);
    await insertAuditEvent(tx, { orgId, actorId, action: 'upload.attach', resourceType: 'project', resourceId: projectId, details: { sessionId, sha256: row.sha256, sizeBytes: row.sizeBytes } });
  });
  await materialize(ctx, orgId, projectId);
}

/**
 * Moves the project's latest consumed upload into `<projectId>/current` if it is not there yet
 * (idempotent: attach calls it after its commit; scans, builds and the sweep repair an interrupted
 * move), and answers whether the project has its uploaded source in `current` now. One at a time
 * per project, in this process and, on PostgreSQL, across the instances sharing the data dir (an
 * advisory lock): two at once (an attach while a build of the previous upload looks for its source)
 * each moved `current` aside and one found the staged folder gone, leaving no `current` at all (a
 * deploy then answered "no uploaded source yet"). The folder moved aside is removed after.
 */
function materialize(ctx: Deps, orgId: string, projectId: string): Promise<boolean> {
  const key = `upload-source:${projectId}`;
  return serialOf(ctx.db).run(key, async () => {
    const moved =
      ctx.dialect === 'postgres'
        ? await transaction(ctx.db, async (tx) => {
            await sql`select pg_advisory_xact_lock(hashtext(${key}))`.execute(tx);
            return moveIntoCurrent(ctx, tx, orgId, projectId);
          })
        : await moveIntoCurrent(ctx, ctx.db, orgId, projectId);
    if (moved.old) await fsp.rm(moved.old, { recursive: true, force: true });
    return moved.current;
  });
}

async function moveIntoCurrent(ctx: Deps, db: Db, orgId: string, projectId: string): Promise<{ current: boolean; old?: string }> {
  const row = await store.currentForProject(db, orgId, projectId);
  if (!row) return { current: false };
  const dir = projectDir(ctx, projectId);
  const current = path.join(dir, 'current');
  const staged = stagedDir(ctx, row.id);
  if (!existsSync(path.join(staged, 'src'))) return { current: existsSync(current) };
  await fsp.mkdir(dir, { recursive: true });
  const old = path.join(dir, `.old-${randomString(8)}`);
  const movedAside = existsSync(current);
  if (movedAside) await fsp.rename(current, old);
  await fsp.rename(path.join(staged, 'src'), current);
  await fsp.rm(path.join(dir, 'source.tar.gz'), { force: true });
  await fsp.rename(path.join(staged, 'source.tar.gz'), path.join(dir, 'source.tar.gz')).catch(() => {});
  const meta = { sessionId: row.id, sha256: row.sha256, sizeBytes: row.sizeBytes, files: row.files, attachedAt: row.consumedAt };
  await fsp.writeFile(path.join(dir, 'source.json'), JSON.stringify(meta, null, 2) + '\n');
  await fsp.rm(staged, { recursive: true, force: true });
  return { current: true, old: movedAside ? old : undefined };
}

/**
 * For the build pipeline: the folder holding the project's current uploaded source
 * (`<dataDir>/uploads/<projectId>/current`), or null when the project has none. Copy it; never build in it.
 */
export async function uploadSourceDir(ctx: Deps, orgId: string, projectId: string): Promise<string | null> {
  return (await materialize(ctx, orgId, projectId)) ? path.join(projectDir(ctx, projectId), 'current') : null;
}
