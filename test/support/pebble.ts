/**
 * A real ACME server for tests: Debian's `pebble` (Let's Encrypt's RFC 8555 test server), started as a
 * child process on free loopback ports with a temporary configuration.
 *
 * - Its own HTTPS certificate (the ACME and management listeners): Debian's package ships no test
 *   certificate, so a throwaway CA and a `localhost`/`127.0.0.1` certificate are made here with
 *   `openssl` (argument arrays, no shell). `caCertPem` is that CA: trust it to talk to Pebble (what
 *   `BERTH_ACME_CA_FILE` will hold).
 * - Challenges: HTTP-01 is fetched from `<name>:<httpPort>` and TLS-ALPN-01 from `<name>:<tlsPort>`,
 *   ports the caller gives; names are resolved through `dnsServer` (`-dnsserver`, e.g. a DNS stub of
 *   `test/support/dns-stub.ts` with an A record `name -> 127.0.0.1`), which also answers DNS-01 TXT lookups.
 * - `PEBBLE_VA_NOSLEEP=1` (no random validation delay), `PEBBLE_VA_ALWAYS_VALID` removed (challenges
 *   are really checked), `PEBBLE_WFE_NONCEREJECT=0` and `PEBBLE_AUTHZREUSE=0` by default (deterministic
 *   runs; `env` overrides them, e.g. to exercise badNonce retries).
 * - `rootCertPem()`: the root that signs issued certificates, from the management endpoint `/roots/0`
 *   (Pebble makes a fresh one per start).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from './wait.js';

export const PEBBLE_BIN = '/usr/bin/pebble';
const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 5_000;

export interface PebbleOptions {
  /** `host:port` of the DNS server Pebble resolves names and DNS-01 TXT records with. */
  dnsServer: string;
  /** The port Pebble fetches HTTP-01 answers from. */
  httpPort: number;
  /** The port Pebble checks TLS-ALPN-01 on (default: a free port nobody answers on). */
  tlsPort?: number;
  /** Extra environment for Pebble (e.g. `{ PEBBLE_WFE_NONCEREJECT: '5' }`). */
  env?: Record<string, string>;
}

export interface Pebble {
  /** `https://127.0.0.1:<port>/dir`. */
  directoryUrl: string;
  /** The CA that signed Pebble's own HTTPS certificate (trust it to talk to Pebble). */
  caCertPem: string;
  /** The same CA as a file (for BERTH_ACME_CA_FILE), removed with the rest by `stop`. */
  caFile: string;
  /** Pebble's own HTTPS certificate and key (localhost, 127.0.0.1; signed by `caFile`), for a test server in front of it. */
  tlsCertFile: string;
  tlsKeyFile: string;
  /** The root that signs the certificates Pebble issues. */
  rootCertPem(): Promise<string>;
  /** The management interface, `https://127.0.0.1:<port>`. */
  managementUrl: string;
  /** What Pebble printed so far (for a failing test's message). */
  output(): string;
  stop(): Promise<void>;
}

/** Installs Debian's pebble when it is missing (CI installs it from `.ci/run`). */
export function ensurePebbleInstalled(): void {
  if (existsSync(PEBBLE_BIN)) return;
  execFileSync('apt-get', ['install', '-y', '-qq', 'pebble'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 180_000 });
}

/** A port free on 127.0.0.1 right now (bound and released). */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/**
 * `n` distinct ports free on 127.0.0.1 right now: all bound at once, then released. (Bound and released
 * one after another, the kernel may hand the same port out twice: pebble once got one port for its
 * directory and its management interface, and failed to start.)
 */
export async function freePorts(n: number, avoid: (number | undefined)[] = []): Promise<number[]> {
  for (let i = 0; i < 20; i++) {
    const ports = await bindFree(n);
    if (!ports.some((p) => avoid.includes(p))) return ports;
  }
  throw new Error(`no ${n} free ports apart from ${avoid.join(', ')}`);
}

async function bindFree(n: number): Promise<number[]> {
  const servers = Array.from({ length: n }, () => net.createServer());
  try {
    for (const server of servers) {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((s) => (s.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()))));
  }
}

export async function startPebble(opts: PebbleOptions): Promise<Pebble> {
  ensurePebbleInstalled();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-pebble-'));
  try {
    const caCertPem = makeCertificates(dir);
    // Apart from the ports the caller chose (released, so the kernel may offer them again).
    const [acmePort, managementPort, freeTls] = await freePorts(3, [opts.httpPort, opts.tlsPort]);
    const tlsPort = opts.tlsPort ?? freeTls!;
    const config = {
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: path.join(dir, 'cert.pem'),
        privateKey: path.join(dir, 'key.pem'),
        httpPort: opts.httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    };
    const configFile = path.join(dir, 'pebble-config.json');
    writeFileSync(configFile, JSON.stringify(config, null, 2));

    const env: NodeJS.ProcessEnv = { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0', ...opts.env };
    delete env.PEBBLE_VA_ALWAYS_VALID;
    const child = spawn(PEBBLE_BIN, ['-config', configFile, '-dnsserver', opts.dnsServer], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-64 * 1024);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    let exited: number | string | null | undefined;
    child.once('exit', (code, signal) => (exited = code ?? signal));
    child.once('error', (e) => (exited = e.message));

    const directoryUrl = `https://127.0.0.1:${acmePort}/dir`;
    const managementUrl = `https://127.0.0.1:${managementPort}`;
    try {
      await waitFor(
        async () => {
          if (exited !== undefined) throw new Error(`pebble exited (${exited})`);
          const dirDoc = JSON.parse(await get(directoryUrl, caCertPem));
          return typeof dirDoc.newAccount === 'string' && (await get(`${managementUrl}/roots/0`, caCertPem)).includes('BEGIN CERTIFICATE');
        },
        'pebble to serve its directory and management interface',
        START_TIMEOUT_MS,
        100,
      );
    } catch (e) {
      await stopChild(child);
      throw new Error(`${(e as Error).message}\npebble's output:\n${output.slice(-4000)}`, { cause: e });
    }

    return {
      directoryUrl,
      caCertPem,
      caFile: path.join(dir, 'ca.pem'),
      tlsCertFile: config.pebble.certificate,
      tlsKeyFile: config.pebble.privateKey,
      managementUrl,
      rootCertPem: () => get(`${managementUrl}/roots/0`, caCertPem),
      output: () => output,
      stop: async () => {
        await stopChild(child);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

/** A throwaway CA and Pebble's HTTPS certificate for localhost/127.0.0.1 in `dir`; answers the CA's PEM. */
function makeCertificates(dir: string): string {
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 20_000 });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '3', '-subj', '/CN=Berth test CA for Pebble',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  openssl(['req', ...ec, '-keyout', 'key.pem', '-out', 'cert.csr', '-subj', '/CN=localhost']);
  writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n');
  openssl(['x509', '-req', '-in', 'cert.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-out', 'cert.pem', '-days', '3', '-extfile', 'ext.cnf']);
  return readFileSync(path.join(dir, 'ca.pem'), 'utf8');
}

/** GET over HTTPS trusting `ca`; the body of a 200, else a throw. Bounded by REQUEST_TIMEOUT_MS. */
function get(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 200) resolve(body);
        else reject(new Error(`GET ${url}: HTTP ${res.statusCode} ${body.slice(0, 200)}`));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await gone;
  clearTimeout(timer);
}
