import net from 'node:net';

/**
 * A SOCKS5 server (RFC 1928: no authentication, CONNECT only) on a Unix socket that reaches this
 * machine's loopback and nothing else: 127.0.0.0/8, ::1, `localhost` and `*.localhost` (the names
 * Chromium itself sends to loopback). It is the browser tests' one way out of the network namespace
 * their Chromium runs in (test/support/chromium-netns.mjs); anything else is refused, so a page can
 * never reach past this machine. Written here rather than taken from the registry: its SOCKS servers
 * are unmaintained (socksv5, last released 2015) and this is the protocol's smallest part.
 */
export interface LoopbackSocks {
  close(): Promise<void>;
}

const REPLY = { ok: 0, notAllowed: 2, refused: 5, commandNotSupported: 7, addressNotSupported: 8 } as const;

export function startLoopbackSocks(socketPath: string): Promise<LoopbackSocks> {
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    serve(client, open);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve({
        close: () =>
          new Promise<void>((done) => {
            for (const s of open) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

/** Reads the greeting and the request as bytes arrive, then pipes the client to its target. */
function serve(client: net.Socket, open: Set<net.Socket>): void {
  let buf = Buffer.alloc(0);
  let greeted = false;
  const onData = (chunk: Buffer): void => {
    buf = Buffer.concat([buf, chunk]);
    if (!greeted) {
      if (buf.length < 2 || buf.length < 2 + buf[1]!) return;
      const methods = buf.subarray(2, 2 + buf[1]!);
      if (buf[0] !== 5 || !methods.includes(0)) return void client.end(Buffer.from([5, 0xff]));
      client.write(Buffer.from([5, 0]));
      buf = buf.subarray(2 + buf[1]!);
      greeted = true;
    }
    const req = readRequest(buf);
    if (req === 'more') return;
    client.off('data', onData);
    if (req === 'bad') return reply(client, REPLY.addressNotSupported, true);
    if (req.cmd !== 1) return reply(client, REPLY.commandNotSupported, true);
    const host = loopbackHost(req.host);
    if (!host) return reply(client, REPLY.notAllowed, true);
    client.pause();
    const target = net.connect({ host, port: req.port });
    open.add(target);
    target.on('close', () => open.delete(target));
    target.once('connect', () => {
      reply(client, REPLY.ok, false);
      if (req.rest.length) target.write(req.rest);
      client.pipe(target);
      target.pipe(client);
      client.resume();
    });
    target.on('error', () => (target.connecting ? reply(client, REPLY.refused, true) : client.destroy()));
    client.on('close', () => target.destroy());
  };
  client.on('data', onData);
}

function reply(client: net.Socket, code: number, end: boolean): void {
  const answer = Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
  if (end) client.end(answer);
  else client.write(answer);
}

interface Request {
  cmd: number;
  host: string;
  port: number;
  rest: Buffer;
}

/** VER CMD RSV ATYP DST.ADDR DST.PORT; 'more' until all of it has arrived. */
function readRequest(buf: Buffer): Request | 'more' | 'bad' {
  if (buf.length < 5) return 'more';
  if (buf[0] !== 5) return 'bad';
  const atyp = buf[3];
  const addrLen = atyp === 1 ? 4 : atyp === 4 ? 16 : atyp === 3 ? 1 + buf[4]! : -1;
  if (addrLen < 0) return 'bad';
  const end = 4 + addrLen + 2;
  if (buf.length < end) return 'more';
  const addr = buf.subarray(4, 4 + addrLen);
  const host =
    atyp === 1
      ? [...addr].join('.')
      : atyp === 4
        ? ipv6Text(addr)
        : addr.subarray(1).toString('latin1');
  return { cmd: buf[1]!, host, port: buf.readUInt16BE(end - 2), rest: buf.subarray(end) };
}

/** The address to connect to when `host` names this machine's loopback; null otherwise. */
export function loopbackHost(host: string): string | null {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return '127.0.0.1';
  if (net.isIPv4(name) && name.startsWith('127.')) return name;
  if (name === '::1' || name === '[::1]') return '::1';
  return null;
}

/** ::1 as such, any other IPv6 address as eight groups (never loopback, so never connected to). */
function ipv6Text(addr: Buffer): string {
  if (addr.subarray(0, 15).every((b) => b === 0) && addr[15] === 1) return '::1';
  return (addr.toString('hex').match(/.{4}/g) ?? []).join(':');
}
