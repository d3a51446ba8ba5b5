import type { Selectable, Updateable } from 'kysely';
import type { Db } from '../../db/client.js';
import { inOrg } from '../../db/scope.js';
import type { NotificationChannelsTable, NotificationDeliveriesTable } from './notifications.tables.js';

/** SQL of the notifications area. Every query is scoped by org. */

export type ChannelRow = Selectable<NotificationChannelsTable>;
export type DeliveryRow = Selectable<NotificationDeliveriesTable>;

export function findChannel(db: Db, orgId: string, id: string): Promise<ChannelRow | undefined> {
  return db.selectFrom('notificationChannels').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

export function listChannels(db: Db, orgId: string): Promise<ChannelRow[]> {
  return db.selectFrom('notificationChannels').selectAll().where(inOrg(orgId)).orderBy('createdAt').orderBy('id').execute();
}

export async function insertChannel(db: Db, row: ChannelRow): Promise<void> {
  await db.insertInto('notificationChannels').values(row).execute();
}

export async function updateChannel(db: Db, orgId: string, id: string, set: Updateable<NotificationChannelsTable>): Promise<void> {
  await db.updateTable('notificationChannels').set(set).where(inOrg(orgId)).where('id', '=', id).execute();
}

/** Removes the channel and its deliveries (a queued retry then finds nothing to do). */
export async function deleteChannel(db: Db, orgId: string, id: string): Promise<void> {
  await db.deleteFrom('notificationDeliveries').where(inOrg(orgId)).where('channelId', '=', id).execute();
  await db.deleteFrom('notificationChannels').where(inOrg(orgId)).where('id', '=', id).execute();
}

export async function insertDelivery(db: Db, row: DeliveryRow): Promise<void> {
  await db.insertInto('notificationDeliveries').values(row).execute();
}

export function findDelivery(db: Db, orgId: string, id: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom('notificationDeliveries').selectAll().where(inOrg(orgId)).where('id', '=', id).executeTakeFirst();
}

/** A channel's deliveries, newest first. */
export function listDeliveries(db: Db, orgId: string, channelId: string, limit: number): Promise<DeliveryRow[]> {
  return db
    .selectFrom('notificationDeliveries')
    .selectAll()
    .where(inOrg(orgId))
    .where('channelId', '=', channelId)
    .orderBy('createdAt', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export async function updateDelivery(db: Db, orgId: string, id: string, set: Updateable<NotificationDeliveriesTable>): Promise<void> {
  await db.updateTable('notificationDeliveries').set(set).where(inOrg(orgId)).where('id', '=', id).execute();
}
