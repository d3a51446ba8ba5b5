import { AppError } from '../../lib/errors.js';

/** A `since` query value as an ISO time (400 naming `query.since` when it is not one). */
export function checkSince(since: string | undefined): string | undefined {
  return checkTime(since, 'since');
}

/** A time query value (`since`, `until`) as an ISO time (400 naming `query.<name>` when it is not one). */
export function checkTime(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  if (!Number.isFinite(t)) throw new AppError('VALIDATION_FAILED', `${name} must be an ISO-8601 timestamp`, { field: `query.${name}` });
  return new Date(t).toISOString();
}

export { streamLogs, type LogStreamOptions } from '../../http/log-stream.js';
