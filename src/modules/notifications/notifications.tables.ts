/**
 * Notification channels and deliveries (contract section 20, "Alerts"). Secrets are sealed with the
 * server's keyring: a channel's URL (a Slack or Discord incoming-webhook URL is itself a credential)
 * and a webhook channel's signing secret.
 */
export interface NotificationChannelsTable {
  id: string;
  orgId: string;
  name: string;
  kind: string; // 'webhook' | 'slack' | 'discord' | 'email'
  /** Sealed URL (AAD `notification-channel:<id>:url`); null for email. */
  urlSealed: string | null;
  /** The URL as the API shows it: scheme, host and port, the rest masked. */
  urlDisplay: string | null;
  /** The email recipient (email channels). */
  emailTo: string | null;
  /** Sealed HMAC secret of a webhook channel (AAD `notification-channel:<id>:secret`). */
  secretSealed: string | null;
  /** JSON array of event names. */
  events: string;
  createdAt: string;
  updatedAt: string;
}

export interface NotificationDeliveriesTable {
  id: string;
  orgId: string;
  channelId: string;
  /** An event name of contract section 20, or `test`. */
  event: string;
  /** JSON of the notice `{ subject, detail, url, projectId, at }` (never a secret). */
  payload: string;
  status: string; // 'pending' | 'delivered' | 'failed'
  attempts: number;
  /** Why the last attempt failed, in Berth's words (never the receiver's body). */
  lastError: string | null;
  /** The HTTP status the receiver answered last (webhook, slack, discord). */
  lastStatusCode: number | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface NotificationTables {
  notificationChannels: NotificationChannelsTable;
  notificationDeliveries: NotificationDeliveriesTable;
}
