/**
 * The notifications area's surface (contract section 20, "Alerts"): the only file other areas
 * import. `notifyEvent` records a delivery to every channel of the org subscribed to the event and
 * queues it; it never throws.
 */
export { notificationsModule } from './notifications.module.js';
export type { NotificationTables } from './notifications.tables.js';
export { notifyEvent, type NoticeCtx } from './delivery.js';
export { NOTIFICATION_EVENTS, type NotificationEvent, type NoticeInput } from './events.js';
