/**
 * The services area's `serviceSeeds` port: a preview's instance of a managed service seeded from
 * production (`seedFrom: "production"`) starts from the production service's last succeeded backup,
 * downloaded here and checked against its sha256 as a restore's artifact is.
 */
import type { ServiceSeedPort } from '../services/index.js';
import { downloadTo } from './artifacts.js';
import * as store from './backups.store.js';
import { storageOf } from './destination-storage.js';

export const serviceSeeds: ServiceSeedPort = {
  async lastBackup(ctx, service, file) {
    const run = await store.lastSucceededRunOfService(ctx.db, service.orgId, service.projectId, service.id);
    if (!run?.artifactKey || !run.sha256) return null;
    const dest = await store.findDestination(ctx.db, service.orgId, run.destinationId);
    if (!dest) return null;
    const got = await downloadTo(await storageOf(ctx, dest), run.artifactKey, file);
    if (got.sha256 !== run.sha256) throw new Error(`the backup ${run.id} does not match its recorded sha256`);
    return { runId: run.id };
  },
};
