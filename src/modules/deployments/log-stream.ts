import { AppError } from '../../lib/errors.js';

/** A `since` query value as an ISO time (400 naming `query.since` when it is not one). */
export function checkSince(since: string | undefined): string | undefined {
  if (since === undefined) return undefined;
  const t = Date.parse(since);
  if (!Number.isFinite(t)) throw new AppError('VALIDATION_FAILED', 'since must be an ISO-8601 timestamp', { field: 'query.since' });
  return new Date(t).toISOString();
}

export { streamLogs, type LogStreamOptions } from '../../http/log-stream.js';
