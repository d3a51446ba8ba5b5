/**
 * Berth's own programs in a sandbox's network namespace (the server reaching a managed service, whose
 * network admits other boxes of its project only, never the host: docs/services.md "Reachability").
 * A backup's dump program and the `services connect` tunnel run there through `nsenter --net`, as the
 * server (root), with an argument array; nothing on the host can connect to the service itself.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Duplex } from 'node:stream';
import { SUBNET_PREFIX } from './host-rules.js';

const NSENTER = '/usr/bin/nsenter';

/** The namespace (`/run/netns/berth-<n>`) of the sandbox whose own address is `addr`; null when it is none of ours. */
export function namespaceOfBoxAddress(addr: string): string | null {
  const prefix = `${SUBNET_PREFIX}.`;
  if (!addr.startsWith(prefix)) return null;
  const parts = addr.slice(prefix.length).split('.').map(Number);
  if (parts.length !== 2 || parts.some((n) => !Number.isInteger(n) || n < 0 || n > 255)) return null;
  const offset = parts[0]! * 256 + parts[1]!;
  if (offset % 4 !== 2) return null;
  const ns = `/run/netns/berth-${(offset - 2) / 4}`;
  return existsSync(ns) ? ns : null;
}

/** `bin args` as run inside the namespace of the box at `addr` (when there is one and the server is root), else as given. */
export function argvAt(addr: string, bin: string, args: string[]): { bin: string; args: string[] } {
  const ns = process.getuid?.() === 0 ? namespaceOfBoxAddress(addr) : null;
  return ns ? { bin: NSENTER, args: [`--net=${ns}`, '--', bin, ...args] } : { bin, args };
}

/** The relay run inside the namespace: a TCP connection to argv[1]:argv[2] on its stdin and stdout; "connected" on stderr. */
const RELAY = [
  "const s = require('node:net').connect({ host: process.argv[1], port: Number(process.argv[2]) });",
  "s.setNoDelay(true);",
  "s.once('connect', () => process.stderr.write('connected\\n'));",
  "s.on('error', (e) => { process.stderr.write('error ' + e.code + '\\n'); process.exit(1); });",
  "s.on('close', () => process.exit(0));",
  "process.stdin.pipe(s);",
  "s.pipe(process.stdout);",
].join('\n');

/**
 * A TCP connection to `host:port` made from inside the namespace of the box at `host` (a relay process
 * there); a plain connection when the address is no box of ours. Rejects with the reason when it does not connect within `timeoutMs`.
 */
export function connectAt(host: string, port: number, timeoutMs: number): Promise<Duplex> {
  const { bin, args } = argvAt(host, process.execPath, ['-e', RELAY, host, String(port)]);
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
  const stream = Duplex.from({ readable: child.stdout, writable: child.stdin });
  stream.on('close', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => fail('timed out'), timeoutMs);
    function fail(why: string): void {
      clearTimeout(timer);
      child.kill('SIGKILL');
      stream.destroy();
      reject(new Error(why));
    }
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString('utf8');
      if (err.startsWith('connected\n')) {
        clearTimeout(timer);
        resolve(stream);
      }
    });
    child.once('error', (e) => fail(e.message));
    child.once('exit', (code) => {
      if (!err.startsWith('connected\n')) fail(/^error (\S+)/.exec(err)?.[1] ?? `the relay exited (${code})`);
    });
  });
}
