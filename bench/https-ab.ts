import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startChild, type Child } from './lib.js';
import { tgzOf, writeHelloApp, freePort } from './hello.js';
import { cpuSeconds, deployHello, httpsLoad, makeCertificates, type RpsResult } from './https.js';

/**
 * Two Berth trees over TLS in the same rounds, a diagnostic for changes to the edge's TLS paths:
 * `B_ROOT=<a worktree with its dist/> npx tsx bench/https-ab.ts` (`B_FLAGS="--flag ..."`: B's node flags
 * instead of `npm start`'s, B_ROOT then may be this tree). This tree ("A") and B_ROOT's ("B")
 * each run the hello app (process runtime) behind their edge's TLS listener with the same certificate;
 * both are warmed as bench/https.ts warms the edge (HTTPS/1.1, then HTTP/2), then ROUNDS rounds
 * alternate A and B over HTTPS/1.1 (32 connections) and then over HTTP/2 (32 streams over 4
 * connections). Printed: each round's req/s of B over A and both servers' CPU per request, then medians.
 */

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const MS = Number(process.env.ROUND_MS ?? 3000);
const WARM_MS = Number(process.env.WARM_MS ?? 4000);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const bRoot = process.env.B_ROOT;
  if (!bRoot) throw new Error('set B_ROOT to a worktree with its own dist/');
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-https-ab-'));
  const { ca, certFile, keyFile } = makeCertificates(tmp);
  const appDir = path.join(tmp, 'app');
  writeHelloApp(appDir);
  const children: Child[] = [];
  try {
    const sides: { name: string; port: number; pid: number; host: string }[] = [];
    for (const [name, root] of [['A', process.cwd()], ['B', bRoot]] as const) {
      const port = await freePort();
      // B_FLAGS: B's node flags (as in bench/edge-cpu.ts), for a flag's A/B on the same tree.
      const saved = process.env.BENCH_NODE_FLAGS;
      if (name === 'B' && process.env.B_FLAGS !== undefined) process.env.BENCH_NODE_FLAGS = process.env.B_FLAGS;
      const child = await startChild(path.join(root, 'bench/servers/berth.mjs'), { BERTH_RUNTIME: 'process', BERTH_CGROUPS: '', BERTH_HTTPS_PORT: String(port), BERTH_APPS_DOMAIN: 'bench.test', BERTH_WILDCARD_CERT_FILE: certFile, BERTH_WILDCARD_KEY_FILE: keyFile });
      if (saved === undefined) delete process.env.BENCH_NODE_FLAGS;
      else process.env.BENCH_NODE_FLAGS = saved;
      children.push(child);
      const { url, token, pid } = child.info as { url: string; token: string; pid: number };
      const project = await deployHello(url, token, tgzOf(appDir));
      sides.push({ name, port, pid, host: `${project.slug}.bench.test` });
    }
    const h2 = { connections: 4 };
    for (const s of sides) {
      await httpsLoad(s.port, ca, s.host, 32, WARM_MS, () => cpuSeconds(s.pid, false));
      await httpsLoad(s.port, ca, s.host, 32, WARM_MS, () => cpuSeconds(s.pid, false), h2);
    }
    for (const [label, opts] of [['HTTPS/1.1', undefined], ['HTTP/2', h2]] as const) {
      const got = sides.map(() => [] as RpsResult[]);
      for (let r = 0; r < ROUNDS; r++) {
        for (const [i, s] of sides.entries()) got[i]!.push(await httpsLoad(s.port, ca, s.host, 32, MS, () => cpuSeconds(s.pid, false), opts));
        const [a, b] = [got[0]![r]!, got[1]![r]!];
        console.log(`${label} round ${r}: B/A ${(b.rps / a.rps).toFixed(2)}  A ${a.rps.toFixed(0)} req/s ${((a.serverCpu / a.rps) * 1e6).toFixed(0)} µs  B ${b.rps.toFixed(0)} req/s ${((b.serverCpu / b.rps) * 1e6).toFixed(0)} µs  load ${os.loadavg()[0].toFixed(1)}`);
      }
      const us = (xs: RpsResult[]) => median(xs.map((x) => (x.serverCpu / x.rps) * 1e6)).toFixed(0);
      const lower = got[0]!.filter((a, r) => a.serverCpu / a.rps < got[1]![r]!.serverCpu / got[1]![r]!.rps).length;
      console.log(`${label}: B/A ${median(got[1]!.map((b, r) => b.rps / got[0]![r]!.rps)).toFixed(2)}, CPU per request A ${us(got[0]!)} µs, B ${us(got[1]!)} µs; A lower in ${lower} of ${ROUNDS} rounds`);
    }
  } finally {
    for (const c of children) await c.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
