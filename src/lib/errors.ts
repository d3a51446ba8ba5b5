/** The closed set of error codes (contract section 3) and the one table of their statuses. */
export const ERROR_STATUS = {
  VALIDATION_FAILED: 400,
  INVALID_RESOURCE_TYPE: 400,
  RESOURCE_NOT_IN_ORG: 400,
  INVITATION_NOT_ACCEPTED: 400,
  INVALID_CRON: 400,
  INVALID_CONFIRMATION_TOKEN: 400,
  GIT_PROVIDER_NOT_CONNECTED: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  SIGNUP_CLOSED: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  NO_INSTALLATION_TOKEN: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  cloud_unreachable: 503,
  INTERNAL: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface AppErrorOptions {
  field?: string;
  retryAfterSeconds?: number;
  /** Extra headers for the error answer. */
  headers?: Record<string, string>;
}

/**
 * The one error type services throw. It carries a code from the closed enum; the HTTP layer maps it
 * to a status and the envelope. Services never see HTTP types.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly field?: string;
  readonly retryAfterSeconds?: number;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, opts: AppErrorOptions = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.field = opts.field;
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.headers = opts.headers;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export const notFound = (what = 'record') => new AppError('NOT_FOUND', `${what} not found`);
export const forbidden = (message = 'you do not have permission to do this') => new AppError('FORBIDDEN', message);
export const conflict = (message: string, field?: string) => new AppError('CONFLICT', message, { field });
export const invalid = (field: string, message: string) => new AppError('VALIDATION_FAILED', message, { field });
export const unauthenticated = (message = 'authentication required') => new AppError('UNAUTHENTICATED', message);
