import type { AppContext } from '../../context.js';
import type { ResolvedResource } from '../../http/route.js';
import * as store from './notifications.store.js';
import type { ChannelRow } from './notifications.store.js';

/** The notifications area's resource kind: a channel of the actor's org (another org's is not found: 404). */

declare module '../../http/route.js' {
  interface ResourceKinds {
    notification_channel: ChannelRow;
  }
}

export function channelRef(row: ChannelRow): ResolvedResource<'notification_channel'> {
  return { kind: 'notification_channel', id: row.id, orgId: row.orgId, grantKeys: [], record: row };
}

export const resolvers = {
  async notification_channel(ctx: Pick<AppContext, 'db'>, orgId: string, id: string) {
    const row = await store.findChannel(ctx.db, orgId, id);
    return row ? channelRef(row) : null;
  },
};
