/**
 * A managed service's data in a transfer with `includeData` (docs/services.md "Transfers"): the
 * native dump the backups make (dumps.ts), written to a file of the server's own with its sha256,
 * and loaded on the other side into a fresh instance the way a restore does (restore.ts: loaded in
 * its box, checked that it answers and holds the dump's tables or keys, then swapped in).
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AppContext } from '../../context.js';
import { conflict, notFound } from '../../lib/errors.js';
import { HashCounter } from '../../lib/hash-counter.js';
import { nativeDump } from './dumps.js';
import { prepareFresh, swapFresh } from './restore.js';
import * as store from './services.store.js';
import type { ManagedServiceRow } from './services.store.js';

/** The kinds whose data can move (the ones a backup can dump and a restore can load; MongoDB under the docker runtime, the only one running it). */
const MOVABLE = new Set(['postgres', 'mysql', 'redis', 'mongodb']);

/** A temporary file of the server's own for a dump in transit (the caller removes it). */
export async function transferFile(ctx: AppContext): Promise<string> {
  const dir = path.join(ctx.config.dataDir, 'tmp');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return path.join(dir, `transfer-${randomBytes(12).toString('hex')}`);
}

/** Why the production service `name` cannot give its data now (stopped, a kind without dumps), or null. */
export async function whyNoData(ctx: AppContext, orgId: string, projectId: string, name: string): Promise<string | null> {
  const row = await store.findManagedByName(ctx.db, orgId, projectId, name);
  if (!row) return `there is no managed service ${name}`;
  if (!MOVABLE.has(row.kind)) return `the data of ${row.kind} services cannot move yet (no native dump)`;
  if (row.desired !== 'running') return `the service ${name} is stopped: start it to move its data, or transfer without includeData`;
  return null;
}

async function runningRow(ctx: AppContext, orgId: string, projectId: string, name: string): Promise<{ row: ManagedServiceRow; address: { host: string; port: number } }> {
  const row = await store.findManagedByName(ctx.db, orgId, projectId, name);
  if (!row) throw notFound('service');
  const why = await whyNoData(ctx, orgId, projectId, name);
  if (why) throw conflict(why, 'includeData');
  const address = (await ctx.state.services.runner?.whenRunning(row.id, 120_000)) ?? null;
  if (!address) throw conflict(`the service ${name} is not running on this server: its data cannot be dumped`, 'includeData');
  return { row, address };
}

/** Dumps the production service `name` (it must run here) into `file`; answers its sha256 and size. `onBytes` hears the bytes written so far. */
export async function dumpServiceData(ctx: AppContext, orgId: string, projectId: string, name: string, file: string, signal?: AbortSignal, onBytes?: (bytes: number) => void): Promise<{ sha256: string; sizeBytes: number }> {
  const { row, address } = await runningRow(ctx, orgId, projectId, name);
  const runner = ctx.state.services.runner!;
  const hc = new HashCounter(onBytes);
  try {
    await pipeline(await nativeDump(ctx, row, address, path.join(runner.volumeDir(row), 'data'), signal), hc, createWriteStream(file, { mode: 0o600 }), ...(signal ? [{ signal }] : []));
  } catch (e) {
    await rm(file, { force: true });
    throw conflict(`the dump of the service ${name} failed: ${(e as Error).message}`, 'includeData');
  }
  return { sha256: hc.digest(), sizeBytes: hc.bytes };
}

/**
 * The most bytes a dump of the stored production service `name` may have on arrival: twice its
 * diskMb (a text dump can be larger than the data it makes); 404 when there is no such service.
 */
export async function serviceDataLimit(ctx: AppContext, orgId: string, projectId: string, name: string): Promise<number> {
  const row = await store.findManagedByName(ctx.db, orgId, projectId, name);
  if (!row) throw notFound('service');
  return row.diskMb * 2 * 1024 * 1024;
}

/**
 * Loads a dump (a verified file; it is consumed) into the stored production service `name`: a
 * fresh instance is made from it and checked, then swapped in for the service's data, which must
 * answer on it (restore.ts). The service's old data (an empty instance's) is removed afterwards.
 */
export async function loadServiceData(ctx: AppContext, orgId: string, projectId: string, name: string, file: string): Promise<void> {
  const row = await store.findManagedByName(ctx.db, orgId, projectId, name);
  if (!row) throw notFound('service');
  if (!MOVABLE.has(row.kind)) throw conflict(`the data of ${row.kind} services cannot move yet (no native dump)`, 'name');
  const key = `transfer-${randomBytes(6).toString('hex')}`;
  const runner = ctx.state.services.runner;
  if (!runner) throw conflict(`the ${ctx.config.runtime} runtime does not run managed services`, 'name');
  const staging = path.join(runner.volumeDir(row), `restore-${key}`);
  try {
    await prepareFresh(ctx, row, file, staging, key);
  } catch (e) {
    throw conflict(`the data of the service ${name} could not be loaded: ${(e as Error).message}`, 'name');
  }
  const old = await swapFresh(ctx, row, key).catch((e: Error) => {
    throw conflict(`the service ${name} did not start on its data: ${e.message}`, 'name');
  });
  await rm(old, { recursive: true, force: true }).catch(() => {});
}

/**
 * Loads a dump (a verified file; it is consumed) into the data folder of a service not stored yet
 * (`newServiceRows`), as a preview's seed does: it starts on that data once stored and ensured.
 */
export async function prepareServiceData(ctx: AppContext, row: ManagedServiceRow, file: string): Promise<void> {
  const runner = ctx.state.services.runner;
  if (!runner) throw conflict(`the ${ctx.config.runtime} runtime does not run managed services`, 'includeData');
  try {
    await prepareFresh(ctx, row, file, path.join(runner.volumeDir(row), 'data'), `transfer-${randomBytes(6).toString('hex')}`);
  } catch (e) {
    throw conflict(`the data of the service ${row.name} could not be loaded: ${(e as Error).message}`, 'includeData');
  }
}

/** Removes what `prepareServiceData` made for rows that were not stored after all. */
export async function discardServiceRows(ctx: AppContext, rows: ManagedServiceRow[]): Promise<void> {
  const runner = ctx.state.services.runner;
  if (runner) for (const r of rows) await rm(runner.volumeDir(r), { recursive: true, force: true }).catch(() => {});
}
