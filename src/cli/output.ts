import { ApiError } from './client.js';

/**
 * How every `berth` command ends (contract section 12): exit 0 when it did its job, 1 when the
 * server refused or the work failed (a failed deployment), 2 on usage errors (a missing or unknown
 * argument, a bad option value). Errors print the server's message and the field it names, never a
 * stack trace.
 */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** A mistake in how the command was called: exits 2. */
export class UsageError extends Error {}

/** The one line an error prints on stderr. */
export function describeError(e: unknown): string {
  if (e instanceof ApiError) return `error: ${e.message}${e.field ? ` (field: ${e.field})` : ''} [${e.code}]`;
  if (e instanceof Error) {
    const cause = (e as Error & { cause?: { code?: string; message?: string } }).cause;
    // fetch() hides the reason behind "fetch failed": name the refused connection instead.
    if (e.message === 'fetch failed' && cause) return `error: cannot reach the server: ${cause.code ?? cause.message ?? 'connection failed'}`;
    return `error: ${e.message}`;
  }
  return `error: ${String(e)}`;
}

export function fail(e: unknown): never {
  process.stderr.write(describeError(e) + '\n');
  process.exit(e instanceof UsageError ? EXIT_USAGE : EXIT_FAILED);
}

/** Wraps a command's action: any error ends the process through `fail`. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void> | void) {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (e) {
      fail(e);
    }
  };
}

/** `--json` output: one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** Aligned columns for a human-readable table on stdout (no trailing spaces). */
export function printTable(rows: string[][]): void {
  if (rows.length === 0) return;
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const r of rows) process.stdout.write(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd() + '\n');
}

/** Progress and notes go to stderr, so `--json` output on stdout stays parseable. */
export function note(line: string): void {
  process.stderr.write(line + '\n');
}
