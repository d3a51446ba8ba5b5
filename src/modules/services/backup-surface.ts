/**
 * What the backups area uses of managed services (docs/services.md "Backups"): find one, dump it
 * natively while it runs, make a fresh instance from an artifact, swap it in, repair after a crash.
 */
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { AppContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { dumpExtension, nativeDump } from './dumps.js';
import { prepareFresh, repairRestore, restorePaths, swapFresh } from './restore.js';
import * as store from './services.store.js';
import type { ManagedServiceRow } from './services.store.js';

export type { ManagedServiceRow };

/** A managed service of the project, or undefined. */
function find(db: Db, orgId: string, projectId: string, serviceId: string): Promise<ManagedServiceRow | undefined> {
  return store.findManaged(db, orgId, projectId, serviceId);
}

/** The native dump of the service, which must be running on this server. */
async function dump(ctx: AppContext, row: ManagedServiceRow, signal?: AbortSignal): Promise<Readable> {
  const runner = ctx.state.services.runner;
  const address = runner?.address(row.id);
  if (!runner || !address) throw new Error(`the service ${row.name} is not running on this server: start it to back it up`);
  return nativeDump(ctx, row, address, path.join(runner.volumeDir(row), 'data'), signal);
}

export const managedBackups = { find, dump, extension: dumpExtension, paths: restorePaths, prepareFresh, swapFresh, repairRestore };
