import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A tiny Node app without dependencies, written into `dir`: answers `GET /` with its version, `/env/<NAME>`
 * with that variable, `/crash` by exiting 1, `/ws` as a WebSocket echo (minimal RFC 6455 handshake),
 * `/echo` echoing the request body, `/print/<NAME>` printing that variable on stdout and stderr; prints a start line.
 */
export function writeTinyApp(dir: string, opts: { version?: string; extraPackageJson?: Record<string, unknown>; startDelayMs?: number; printEnv?: string } = {}): string {
  mkdirSync(dir, { recursive: true });
  const version = opts.version ?? 'v1';
  writeFileSync(
    path.join(dir, 'server.js'),
    `
const http = require('node:http');
const crypto = require('node:crypto');
const fs = require('node:fs');
const version = ${JSON.stringify(version)};
const bootedAt = Date.now() + '.' + Math.random().toString(36).slice(2, 8);
const server = http.createServer((req, res) => {
  if (req.url === '/crash') { res.end('bye'); console.error('crashing on request'); setTimeout(() => process.exit(1), 10); return; }
  if (req.url.startsWith('/env/')) { res.end(String(process.env[req.url.slice(5)] ?? '')); return; }
  if (req.url === '/echo') { const chunks = []; req.on('data', (c) => chunks.push(c)); req.on('end', () => { res.setHeader('x-got', String(Buffer.concat(chunks).length)); res.end(Buffer.concat(chunks)); }); return; }
  if (req.url === '/headers') { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(req.headers)); return; }
  if (req.url === '/data') { fs.writeFileSync(require('node:path').join(process.env.DATA_DIR, 'touched'), 'yes'); res.end(process.env.DATA_DIR); return; }
  if (req.url === '/log') { console.log('hello from the app ' + version); res.end('logged'); return; }
  if (req.url.startsWith('/print/')) { const n = req.url.slice(7); console.log('stdout ' + n + '=' + process.env[n]); console.error('stderr ' + n + '=' + process.env[n]); res.end('printed'); return; }
  res.setHeader('content-type', 'text/plain');
  res.end('hello ' + version + ' pid ' + process.pid + ' booted ' + bootedAt);
});
server.on('upgrade', (req, socket) => {
  const key = req.headers['sec-websocket-key'];
  const accept = crypto.createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: ' + accept + '\\r\\n\\r\\n');
  socket.on('data', (d) => socket.write(d));
});
${opts.printEnv ? `console.log('env ${opts.printEnv}=' + process.env[${JSON.stringify(opts.printEnv)}]);` : ''}
setTimeout(() => server.listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT + ' ' + version)), ${opts.startDelayMs ?? 0});
process.on('SIGTERM', () => { console.log('got SIGTERM'); server.close(); process.exit(0); });
`,
  );
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: 'tiny-app', version: '1.0.0', private: true, scripts: { start: 'node server.js' }, ...opts.extraPackageJson }, null, 2),
  );
  return dir;
}

export async function httpGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(15000) });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/**
 * The app's own processes: pids whose program (argv[0]) is `program` and whose command line contains
 * `marker`. Not the launch chain around them (nsenter, bwrap, setpriv carry the app's command in their
 * arguments), nor a launcher the sandbox started ahead of a wake (src/runtime/spare-launchers.ts: a
 * waiting `bwrap` with the command the app's last box ran, in a spare namespace of the instance that ran it).
 */
export function appProcessesWith(marker: string, program = 'node'): number[] {
  return processesWith(marker).filter((pid) => {
    try {
      const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
      return argv0 === program || argv0.endsWith(`/${program}`);
    } catch {
      return false;
    }
  });
}

/** Pids on this machine whose command line contains `marker` (the host's view, across namespaces). */
export function processesWith(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) out.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return out;
}
