import dgram from 'node:dgram';
import dnsPacket from 'dns-packet';

/**
 * A tiny authoritative DNS server for tests, on UDP 127.0.0.1 and a free port: it answers TXT
 * questions from `txt` and A questions from `a` (name -> values; a name listed in `servfail` answers
 * SERVFAIL; a name held in either map answers other types with no records) and NXDOMAIN for
 * everything else. Point Berth at it with `BERTH_DNS_SERVERS: stub.server`.
 */
export interface DnsStub {
  /** `127.0.0.1:<port>`, as BERTH_DNS_SERVERS takes it. */
  server: string;
  port: number;
  /** TXT records by lowercase name (no trailing dot); change it at any time. */
  txt: Map<string, string[]>;
  /** A records (IPv4 addresses) by lowercase name (no trailing dot); change it at any time. */
  a: Map<string, string[]>;
  /** Names that answer SERVFAIL (a broken upstream). */
  servfail: Set<string>;
  /** Every question asked, as `TYPE name`. */
  queries: string[];
  close(): Promise<void>;
}

export async function startDnsStub(): Promise<DnsStub> {
  const socket = dgram.createSocket('udp4');
  const txt = new Map<string, string[]>();
  const a = new Map<string, string[]>();
  const servfail = new Set<string>();
  const queries: string[] = [];
  socket.on('message', (msg, rinfo) => {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const q = query.questions?.[0];
    if (!q) return;
    const name = q.name.toLowerCase().replace(/\.$/, '');
    queries.push(`${q.type} ${name}`);
    const values = txt.get(name);
    const addresses = a.get(name);
    // rcode in the flags' low bits: 0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN.
    const rcode = servfail.has(name) ? 2 : values || addresses ? 0 : 3;
    const answers: dnsPacket.Answer[] =
      rcode !== 0
        ? []
        : q.type === 'TXT' && values
          ? values.map((v) => ({ type: 'TXT' as const, name: q.name, ttl: 1, class: 'IN' as const, data: [v] }))
          : q.type === 'A' && addresses
            ? addresses.map((ip) => ({ type: 'A' as const, name: q.name, ttl: 1, class: 'IN' as const, data: ip }))
            : [];
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & dnsPacket.RECURSION_DESIRED) | rcode,
      questions: query.questions,
      answers,
    });
    socket.send(response, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  const { port } = socket.address();
  return {
    server: `127.0.0.1:${port}`,
    port,
    txt,
    a,
    servfail,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
