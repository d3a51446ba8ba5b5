/** The events a channel subscribes to (contract section 20, "Alerts"). */
export const NOTIFICATION_EVENTS = [
  'deployment.failed',
  'deployment.ready',
  'app.degraded',
  'app.recovered',
  'backup.failed',
  'backup.verify_failed',
  'certificate.failed',
  'certificate.expiring',
  'disk.near_limit',
] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];

export const CHANNEL_KINDS = ['webhook', 'slack', 'discord', 'email'] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

/** What an area tells `notifyEvent`: words for people, no secrets. */
export interface NoticeInput {
  orgId: string;
  event: NotificationEvent;
  projectId?: string | null;
  /** One line, e.g. "Deployment of shop failed". */
  subject: string;
  /** A few lines of detail (the reason in Berth's words). */
  detail: string;
  /** Where to look (the app's URL, the dashboard). */
  url?: string | null;
}

/** What a delivery sends (stored as its payload). */
export interface Notice {
  event: NotificationEvent | 'test';
  projectId: string | null;
  subject: string;
  detail: string;
  url: string | null;
  at: string;
}
