/**
 * `POST /api/projects/:id/transfers`: a transfer run in the background, its progress followed
 * (transfer-progress.ts; docs/cloud.md "Transfers in the background"). What can be refused at once
 * is refused before the 202 (the project already there, no link, a service that cannot give its
 * data, a transfer of the project already running); the rest fails the transfer's record.
 */
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { conflict, notFound } from '../../lib/errors.js';
import type { ProjectRow } from '../projects/index.js';
import { serviceDefinitions, whyNoData } from '../services/index.js';
import { requireLink } from './cloud-copy.js';
import type { TransferRecord } from './transfer-progress.js';
import { transferToCloud, transferToSelfHosted } from './transfer.service.js';

export async function startTransfer(ctx: AppContext, actor: Actor, row: ProjectRow, to: 'cloud' | 'self-hosted', includeData: boolean, requestId?: string): Promise<TransferRecord> {
  const tracker = ctx.state.transfers;
  if (to === 'cloud' && row.location === 'cloud') throw conflict('the project already lives on the cloud');
  if (to === 'self-hosted' && row.location !== 'cloud') throw conflict('the project already lives on this instance');
  requireLink(ctx);
  if (tracker.runningFor(row.orgId, row.id)) throw conflict('a transfer of this project is running: follow it, or wait until it ends');
  if (to === 'cloud' && includeData) {
    for (const d of await serviceDefinitions(ctx.db, row.orgId, row.id)) {
      const why = await whyNoData(ctx, row.orgId, row.id, d.name);
      if (why) throw conflict(why, 'includeData');
    }
  }
  const direction = to === 'cloud' ? 'to-cloud' : 'to-self-hosted';
  return tracker.start(row.orgId, row.id, direction, (report) =>
    to === 'cloud' ? transferToCloud(ctx, actor, row, requestId, includeData, report) : transferToSelfHosted(ctx, actor, row, requestId, includeData, report),
  );
}

/** A transfer of the project (404 for another project's or org's, or one finished over an hour ago). */
export function findTransfer(ctx: AppContext, row: ProjectRow, transferId: string): TransferRecord {
  const t = ctx.state.transfers.get(row.orgId, row.id, transferId);
  if (!t) throw notFound('transfer');
  return t;
}
