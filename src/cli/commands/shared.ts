import { createInterface } from 'node:readline';
import { UsageError } from '../output.js';

/** Small helpers the client commands share: option values, times, confirmation. */

/** A whole number option in 1..max, or a usage error naming the option. */
export function positiveInt(option: string, value: string | undefined, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) throw new UsageError(`${option} must be a whole number from 1 to ${max} (got "${value}")`);
  return Number(value);
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * `--since`: an ISO-8601 time (`2024-05-01`, `2024-05-01T12:00:00Z`) or a time before now
 * (`30s`, `10m`, `2h`, `1d`); answers the ISO time. Anything else is a usage error.
 */
export function parseSince(value: string, now = Date.now(), option = '--since'): string {
  const rel = /^(\d+)([smhd])$/.exec(value.trim());
  if (rel) return new Date(now - Number(rel[1]) * UNIT_MS[rel[2]!]!).toISOString();
  if (ISO_TIME.test(value.trim())) {
    const t = Date.parse(value.trim());
    if (Number.isFinite(t)) return new Date(t).toISOString();
  }
  throw new UsageError(`${option} takes an ISO time (2024-05-01T12:00:00Z) or a duration before now (30s, 10m, 2h, 1d), not "${value}"`);
}

/** How long ago `iso` was, shortly: `42s`, `5m`, `3h`, `2d`. */
export function age(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (!Number.isFinite(s)) return '-';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** `s` cut to `max` characters (with an ellipsis), on one line. */
export function clip(s: string | null | undefined, max: number): string {
  const one = (s ?? '').replace(/\s+/g, ' ').trim();
  return one.length > max ? one.slice(0, max - 1) + '…' : one;
}

/** Megabytes with one decimal, for sizes shown to people. */
export function mb(bytes: number | string | null | undefined): string {
  if (bytes == null) return '-';
  return `${(Number(bytes) / 1048576).toFixed(1)} MB`;
}

/** True when a question can be asked: standard input and error are a terminal. */
export function canAsk(): boolean {
  return !!process.stdin.isTTY && !!process.stderr.isTTY;
}

/** Asks a yes/no question on the terminal (stderr); only `y` or `yes` is a yes. */
export function confirm(question: string): Promise<boolean> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    rl.question(`${question} [y/N] `, (answer) => {
      rl.close();
      resolve(/^(y|yes)$/i.test(answer.trim()));
    });
  });
}

/** A path segment of a URL. */
export const seg = (s: string): string => encodeURIComponent(s);
