import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { load, rssMb, ROOT, startChild, type Row } from './lib.js';

/**
 * Issue 21 point 1: the dashboard keeps the server's memory unchanged when nobody uses it, and its
 * first page is small. The server with the built dashboard against the same server with none
 * (BERTH_DASHBOARD_DIR at an empty path), idle after start, in alternating rounds (median of 3);
 * then the RSS after serving the dashboard's page and assets, and the first page's gzip size.
 */

const WEB = path.join(ROOT, 'dist', 'web');

async function idleRss(dashboardDir: string): Promise<{ rss: number; afterUse?: number; rps?: number }> {
  const berth = await startChild('bench/servers/berth.mjs', { BERTH_DASHBOARD_DIR: dashboardDir });
  try {
    await new Promise((r) => setTimeout(r, 3000));
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      samples.push(rssMb(berth.info.pid));
      await new Promise((r) => setTimeout(r, 200));
    }
    samples.sort((a, b) => a - b);
    const rss = samples[2]!;
    if (dashboardDir !== WEB) return { rss };
    const entry = /src="(\/assets\/[^"]+\.js)"/.exec(readFileSync(path.join(WEB, 'index.html'), 'utf8'))?.[1];
    const page = await load({ url: berth.info.url, path: '/projects/x/deployments', connections: 8, durationMs: 3000, expect: 200 });
    if (entry) await load({ url: berth.info.url, path: entry, headers: { 'accept-encoding': 'br, gzip' }, connections: 8, durationMs: 2000, expect: 200 });
    await new Promise((r) => setTimeout(r, 1000));
    return { rss, afterUse: rssMb(berth.info.pid), rps: page.rps };
  } finally {
    await berth.stop();
  }
}

/** Bytes a first visit transfers (gzip): the page, its entry script and stylesheet, and the sign-in page's chunk. */
function firstPageGzipKb(): number {
  const html = readFileSync(path.join(WEB, 'index.html'));
  const assets = [...html.toString().matchAll(/(?:src|href)="\/assets\/([^"]+)"/g)].map((m) => m[1]!);
  const login = readdirSync(path.join(WEB, 'assets')).find((f) => /^login-[\w-]+\.js$/.test(f));
  if (login) assets.push(login);
  let total = gzipSync(html).length;
  for (const a of assets) total += gzipSync(readFileSync(path.join(WEB, 'assets', a)), { level: 9 }).length;
  return total / 1024;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function dashboardBench(): Promise<Row[]> {
  const none: number[] = [];
  const withWeb: Array<{ rss: number; afterUse?: number; rps?: number }> = [];
  for (let i = 0; i < 3; i++) {
    none.push((await idleRss(path.join(ROOT, 'bench', 'no-dashboard'))).rss);
    withWeb.push(await idleRss(WEB));
  }
  const ref = median(none);
  const idle = median(withWeb.map((w) => w.rss));
  const after = median(withWeb.map((w) => w.afterUse ?? NaN));
  const kb = firstPageGzipKb();
  return [
    { bench: 'dashboard', metric: 'idle server RSS with the dashboard vs with none', value: idle, unit: 'MB', reference: ref, ratio: idle / ref, target: '<= 1.02', ok: idle / ref <= 1.02 },
    { bench: 'dashboard', metric: 'server RSS after serving the dashboard (page + assets)', value: after, unit: 'MB', reference: idle, ratio: after / idle },
    { bench: 'dashboard', metric: 'dashboard page req/s (8 connections)', value: median(withWeb.map((w) => w.rps ?? NaN)), unit: 'req/s' },
    { bench: 'dashboard', metric: 'first page transfer (gzip: page, entry script, stylesheet, sign-in chunk)', value: kb, unit: 'KB', target: '< 250 KB', ok: kb < 250 },
  ];
}
