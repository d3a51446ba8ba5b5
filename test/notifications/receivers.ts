import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One request a receiver got: its headers, its body, and whether its signature checked out. */
export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  signatureValid: boolean | null;
}

/**
 * A real HTTP receiver on 127.0.0.1: it answers each request with the next status of `statuses` (the
 * last one repeats) and a body Berth must never echo, and checks `X-Berth-Signature` against `secret`
 * (the HMAC-SHA256 of the exact body bytes) as a webhook consumer would.
 */
export async function startReceiver(opts: { statuses?: number[]; secret?: string } = {}) {
  const got: Received[] = [];
  const statuses = [...(opts.statuses ?? [200])];
  let secret = opts.secret ?? null;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const sig = req.headers['x-berth-signature'];
      let signatureValid: boolean | null = null;
      if (secret) {
        const want = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
        const have = Buffer.from(typeof sig === 'string' ? sig : '');
        signatureValid = want.length === have.length && timingSafeEqual(want, have);
      }
      let json: any = null;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        /* not JSON */
      }
      got.push({ path: req.url ?? '', headers: req.headers, body: body.toString('utf8'), json, signatureValid });
      const status = statuses.length > 1 ? statuses.shift()! : statuses[0]!;
      res.writeHead(status, { 'content-type': 'text/plain' }).end('UPSTREAM-BODY-NEVER-ECHOED');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    got,
    setSecret(s: string) {
      secret = s;
    },
    setStatuses(list: number[]) {
      statuses.splice(0, statuses.length, ...list);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** A real SMTP server on loopback (the smtp-server package): every message it accepts, raw. */
export async function startSmtp() {
  const messages: { from: string; to: string[]; raw: string }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        done();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, messages, close: () => new Promise<void>((r) => server.close(() => r())) };
}
