import type { Kysely } from 'kysely';

/**
 * Notification channels and their deliveries (issue 38, contract section 20). A channel's URL and
 * webhook secret are sealed; a delivery keeps what was sent (no secret) and how its attempts went,
 * so retries survive a restart. Deleting a channel (or its org) removes its deliveries.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('notification_channels')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('url_sealed', 'text')
    .addColumn('url_display', 'text')
    .addColumn('email_to', 'text')
    .addColumn('secret_sealed', 'text')
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('notification_channels_org').on('notification_channels').columns(['org_id', 'created_at']).execute();
  await db.schema
    .createTable('notification_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.notNull().references('orgs.id').onDelete('cascade'))
    .addColumn('channel_id', 'text', (c) => c.notNull().references('notification_channels.id').onDelete('cascade'))
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('last_status_code', 'integer')
    .addColumn('next_attempt_at', 'text')
    .addColumn('delivered_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('notification_deliveries_channel').on('notification_deliveries').columns(['channel_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('notification_deliveries').execute();
  await db.schema.dropTable('notification_channels').execute();
}
