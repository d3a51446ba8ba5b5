import pino, { type Logger } from 'pino';

/** Paths pino censors wherever they appear in a log object. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-upload-token"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  '*.authorization',
  '*.cookie',
  '*.password',
  '*.token',
  '*.secret',
  '*.secretKey',
  '*.secretAccessKey',
  '*.clientSecret',
  '*.privateKey',
  '*.webhookToken',
  '*.confirmationToken',
  '*.connectionUrl',
  'password',
  'token',
  'secret',
];

/** Query parameters whose values never reach a log line (stream tokens ride in the query). */
export function redactUrl(url: string): string {
  return url.replace(/([?&](?:token|access_token|code|state|client_secret)=)[^&#]*/gi, '$1[redacted]');
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: {
        // Requests are logged by id, method, path and address only: never headers or bodies.
        req(req: { method?: string; url?: string; id?: string; ip?: string }) {
          return { id: req.id, method: req.method, url: typeof req.url === 'string' ? redactUrl(req.url) : undefined, ip: req.ip };
        },
        err: pino.stdSerializers.err,
      },
    },
    destination,
  );
}
