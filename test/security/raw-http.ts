import net from 'node:net';

export interface RawAnswer {
  /** Everything the server sent. */
  text: string;
  /** The status of the first answer, or 0 when none came. */
  status: number;
  headers: Record<string, string>;
  /** The JSON body of the first answer, when it is JSON. */
  json: any;
  /** The server closed (or reset) the connection before `waitMs`. */
  closedByServer: boolean;
  elapsedMs: number;
}

/** The port of a test server's URL. */
export const portOf = (url: string) => Number(new URL(url).port);

function parseAnswer(text: string): Pick<RawAnswer, 'status' | 'headers' | 'json'> {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
  const headers: Record<string, string> = {};
  const [head = '', ...rest] = text.split('\r\n\r\n');
  for (const line of head.split('\r\n').slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let json: any;
  try {
    json = JSON.parse(rest.join('\r\n\r\n'));
  } catch {
    json = undefined;
  }
  return { status: m ? Number(m[1]) : 0, headers, json };
}

/**
 * Opens a TCP connection to 127.0.0.1:`port`, writes `chunks` (latin1 strings, so bytes pass as they are, written `gapMs` apart;
 * `null` writes nothing) and collects what comes back until the server closes or `waitMs` passes.
 */
export function rawExchange(port: number, chunks: string[] | null, opts: { gapMs?: number; waitMs?: number } = {}): Promise<RawAnswer> {
  const waitMs = opts.waitMs ?? 5000;
  return new Promise((resolve) => {
    const t0 = Date.now();
    let text = '';
    let closedByServer = false;
    let done = false;
    const socket = net.connect(port, '127.0.0.1');
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, ...parseAnswer(text), closedByServer, elapsedMs: Date.now() - t0 });
    };
    const timer = setTimeout(finish, waitMs);
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', () => {
      closedByServer = true;
      finish();
    });
    socket.on('end', () => {
      closedByServer = true;
      finish();
    });
    socket.on('close', () => {
      if (!done) closedByServer = true;
      finish();
    });
    socket.on('connect', async () => {
      for (const [i, c] of (chunks ?? []).entries()) {
        if (i > 0 && opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
        if (done || socket.destroyed) return;
        socket.write(c, 'latin1');
      }
    });
  });
}
