import { invalid, type AppError } from '../../lib/errors.js';
import { isOutboundRefused, OutboundRefusedError } from '../../lib/outbound.js';

/**
 * Failures of backups in Berth's words. What an S3 endpoint or a database server answers (bodies,
 * error messages, pg_dump's stderr) never reaches an API answer or a run record: a tenant could
 * otherwise use a destination test or a dump as a scanner with an error oracle (issue 15, point 4).
 * The server log keeps the technical detail for the operator.
 */

/** Connection-level failures: the same words whatever the reason (refused, timed out, unreachable). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ECONNABORTED',
  'EPROTO',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const S3_CREDENTIALS = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'InvalidToken',
  'ExpiredToken',
  'AuthorizationHeaderMalformed',
  'InvalidSecurity',
  'Forbidden',
]);

type Shape = { name?: string; code?: string; Code?: string; message?: string; syscall?: string; path?: string; $metadata?: { httpStatusCode?: number }; $fault?: string; cause?: unknown };

/** A tool failure of pg_dump/pg_restore, already in Berth's words (pg-tools.ts). */
export class PgToolError extends Error {
  constructor(
    message: string,
    /** The tool's stderr (tail), for the server log only. */
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'PgToolError';
  }
}

function networkCode(e: Shape | undefined): string | null {
  for (let cur = e, i = 0; cur && i < 5; cur = cur.cause as Shape | undefined, i++) {
    const code = cur.code ?? '';
    if (NETWORK_CODES.has(code) || cur.name === 'TimeoutError' || cur.name === 'RequestTimeout') return code || cur.name!;
  }
  return null;
}

export const OUTBOUND_REFUSED_WORDS = 'the address is internal (loopback, private, link-local or metadata); Berth does not connect there unless BERTH_OUTBOUND_ALLOW lists it';

/** An answer or error that came from the S3 endpoint (the SDK marks those with `$metadata`/`$fault`). */
function fromS3(err: Shape | undefined): boolean {
  return !!(err && (err.$metadata || err.$fault || (err as { $response?: unknown }).$response));
}

/** The text with every postgres:// URL (and the credentials in it) redacted. */
function redactUrls(text: string): string {
  return text.replace(/postgres(ql)?:\/\/[^\s'"]+/gi, 'postgres://[redacted]');
}

/** The message of an error of Berth's own making (or of the local system), with URLs redacted. */
function ownMessage(err: Shape | undefined, e: unknown): string {
  return redactUrls(String(err?.message || err?.name || e)).slice(0, 1000);
}

/**
 * A failure to use a backup destination or a database, in Berth's words: refused addresses,
 * connection failures and anything an S3 endpoint answered get fixed phrases; errors of Berth's own
 * making (verification, a changed artifact, a local folder's EACCES) keep their message. The words of
 * a run's or restore's record, of a destination's `test` and of a prepare that could not read the artifact.
 */
export function describeFailure(e: unknown): string {
  const err = e as Shape | undefined;
  if (err instanceof PgToolError) return err.message;
  if (isOutboundRefused(e)) {
    const r = e instanceof OutboundRefusedError ? e : null;
    return r?.reason === 'unresolvable' ? `could not connect: the host ${r.host} does not resolve` : `could not connect: ${OUTBOUND_REFUSED_WORDS}`;
  }
  if (fromS3(err)) {
    const status = err!.$metadata?.httpStatusCode;
    const name = err!.name ?? err!.Code ?? '';
    if (S3_CREDENTIALS.has(name) || status === 401 || status === 403) return 'the S3 endpoint refused the credentials';
    if (name === 'NoSuchBucket') return 'the bucket does not exist on the S3 endpoint';
    if (name === 'NoSuchKey' || name === 'NotFound' || status === 404) return 'the object is missing from the S3 bucket';
    if (networkCode(err)) return 'could not connect to the S3 endpoint';
    if (status) return `the S3 endpoint answered with an error (HTTP ${status})`;
    return 'the S3 endpoint did not answer like an S3 server';
  }
  if (networkCode(err)) return 'could not connect to the S3 endpoint';
  return ownMessage(err, e);
}

/** The technical detail of a failure for the server log (never for an answer). */
export function logDetail(e: unknown): Record<string, unknown> {
  const err = e as Shape | undefined;
  const out: Record<string, unknown> = { err: redactUrls(String(err?.message ?? e)).slice(0, 500) };
  if (err?.name) out.errName = err.name;
  if (err?.$metadata?.httpStatusCode) out.status = err.$metadata.httpStatusCode;
  if (err instanceof PgToolError) out.stderr = redactUrls(err.stderr).slice(-1000);
  // A managed service's dump or restore tool (services area): its output's tail, password already redacted.
  const detail = (e as { detail?: unknown } | undefined)?.detail;
  if (typeof detail === 'string') out.stderr = redactUrls(detail).slice(-1000);
  return out;
}

/** A refused outbound target as the 400 of the field that named it. */
export function refusedField(e: OutboundRefusedError, field: string): AppError {
  if (e.reason === 'unresolvable') return invalid(field, `${field}: the host ${e.host} does not resolve`);
  if (e.reason === 'invalid') return invalid(field, `${field} must name one host reachable over TCP`);
  return invalid(field, `${field} points to a ${e.detail ?? 'internal'} address (or to a name that resolves to one); Berth does not connect to loopback, private, link-local or metadata addresses unless BERTH_OUTBOUND_ALLOW lists them`);
}
