import { Resolver } from 'node:dns/promises';

/** What a TXT lookup found: the records' values, no record at all, or a lookup that failed. */
export type TxtLookup = { kind: 'found'; values: string[] } | { kind: 'missing' } | { kind: 'failed'; reason: string };

/** Per query attempt; c-ares doubles it on each retry. */
const ATTEMPT_TIMEOUT_MS = 1500;
const TRIES = 2;
/** The whole lookup, whatever the servers do. */
const DEADLINE_MS = 6000;

/**
 * The TXT records at `name` (each record's strings joined, as RFC 7208 reads them), asked of
 * `servers` (`host[:port]`, BERTH_DNS_SERVERS) or the system's resolvers when none are given.
 * Bounded in time; never throws: a refused, failing or slow lookup is `failed` with a reason.
 */
export async function lookupTxt(servers: readonly string[], name: string): Promise<TxtLookup> {
  const resolver = new Resolver({ timeout: ATTEMPT_TIMEOUT_MS, tries: TRIES });
  // Checked at start-up (config.ts): addresses with optional ports, as setServers takes them.
  if (servers.length) resolver.setServers([...servers]);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      resolver.cancel();
      reject(Object.assign(new Error('timed out'), { code: 'ETIMEOUT' }));
    }, DEADLINE_MS);
  });
  try {
    const records = await Promise.race([resolver.resolveTxt(name), deadline]);
    return records.length ? { kind: 'found', values: records.map((chunks) => chunks.join('')) } : { kind: 'missing' };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOTFOUND' || code === 'ENODATA') return { kind: 'missing' };
    const reasons: Record<string, string> = {
      ETIMEOUT: 'the DNS servers did not answer in time',
      ECANCELLED: 'the DNS servers did not answer in time',
      ECONNREFUSED: 'the DNS servers refused the query',
      ESERVFAIL: 'the DNS servers answered SERVFAIL',
      EREFUSED: 'the DNS servers refused the query',
    };
    return { kind: 'failed', reason: (code && reasons[code]) ?? `the lookup failed (${code ?? (e as Error).message})` };
  } finally {
    clearTimeout(timer);
  }
}
