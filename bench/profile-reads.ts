/**
 * `npx tsx bench/profile-reads.ts [path ...]`: a CPU profile of Berth's server while it answers
 * authenticated reads (default `/api/auth/me` and the project read), for issue 36 point 2. The
 * profiles go to BENCH_PROF_DIR (default a temp folder); a summary of the hottest functions (self
 * time) and of Berth's own files (inclusive) is printed per path.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { load, startChild, startFlags, waitIdle } from './lib.js';

const dir = process.env.BENCH_PROF_DIR ?? mkdtempSync(path.join(os.tmpdir(), 'berth-prof-'));
const argv = process.argv.slice(2);
const which = argv.length ? argv : ['/api/auth/me', 'project'];

type Node = { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] };
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[] };

function summarize(file: string): void {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  p.samples.forEach((s, i) => self.set(s, (self.get(s) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;
  const label = (n: Node) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/^.*\/(node_modules|dist|src)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
  const selfBy = new Map<string, number>();
  for (const [id, t] of self) selfBy.set(label(byId.get(id)!), (selfBy.get(label(byId.get(id)!)) ?? 0) + t);
  const incl = new Map<string, number>();
  for (const [id, t] of self) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!);
      if (!/(dist|src)\//.test(l) || l.includes('node_modules/') || seen.has(l)) continue;
      seen.add(l);
      incl.set(l, (incl.get(l) ?? 0) + t);
    }
  }
  const pct = (t: number) => ((100 * t) / busy).toFixed(1).padStart(5) + ' %';
  console.log(`  busy ${(busy / 1e6).toFixed(2)} s of ${(total / 1e6).toFixed(2)} s`);
  console.log('  self time, top 25:');
  for (const [l, t] of [...selfBy].filter(([l]) => !l.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`   ${pct(t)}  ${l}`);
  console.log("  Berth's own functions, inclusive, top 20:");
  for (const [l, t] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`   ${pct(t)}  ${l}`);
}

// `--summarize FILE`: only the summary of a profile taken elsewhere.
if (argv[0] === '--summarize') {
  summarize(argv[1]!);
  process.exit(0);
}
for (const what of which) {
  const out = path.join(dir, what.replace(/\W+/g, '_'));
  process.env.BENCH_NODE_FLAGS = [...startFlags(), '--cpu-prof', `--cpu-prof-dir=${out}`].join(' ');
  const berth = await startChild('bench/servers/berth.mjs');
  delete process.env.BENCH_NODE_FLAGS;
  const auth = { authorization: `Bearer ${berth.info.token}`, 'content-type': 'application/json' };
  let url = what;
  if (what === 'project') {
    const created = await fetch(`${berth.info.url}/api/projects`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'bench', gitOwner: 'acme', gitRepo: 'web' }) });
    url = `/api/projects/${((await created.json()) as { data: { id: string } }).data.id}`;
  }
  await waitIdle(berth.info.pid);
  const r = await load({ url: berth.info.url, path: url, headers: auth, connections: 32, durationMs: Number(process.env.PROF_MS ?? 6000), warmupMs: 1000, expect: 200 });
  await berth.stop();
  console.log(`${what}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(1)} ms, errors ${r.errors}`);
  summarize(path.join(out, readdirSync(out).find((f) => f.endsWith('.cpuprofile'))!));
}
