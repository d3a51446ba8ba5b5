import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestServer } from '../support/harness.js';
import { parseSseBlock, type SseEvent } from '../support/http.js';
import { waitFor } from '../support/wait.js';

/** Fills a folder with nested folders, unicode names, binary and empty files. */
export function fillVolume(dir: string, seed = 1): void {
  mkdirSync(path.join(dir, 'nested', 'deeper', 'deepest'), { recursive: true });
  mkdirSync(path.join(dir, 'ünïcødé ✓', '日本語'), { recursive: true });
  mkdirSync(path.join(dir, 'empty-dir'), { recursive: true });
  writeFileSync(path.join(dir, 'top.txt'), `hello ${seed}\n`);
  writeFileSync(path.join(dir, 'nested', 'deeper', 'deepest', 'bin.dat'), randomBytes(200_000 + seed));
  writeFileSync(path.join(dir, 'ünïcødé ✓', '日本語', 'ファイル.bin'), randomBytes(4097));
  writeFileSync(path.join(dir, 'ünïcødé ✓', 'emoji 🚀.txt'), 'rocket');
  writeFileSync(path.join(dir, 'nested', 'zero.bin'), Buffer.alloc(0));
  writeFileSync(path.join(dir, 'nested', 'nul-bytes.bin'), Buffer.from([0, 1, 2, 255, 0, 0, 10, 13]));
}

/** Relative path -> sha256 (files) or 'dir', for byte-for-byte comparison of two trees. */
export function treeDigest(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = path.join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = statSync(p);
      if (st.isDirectory()) {
        out[r] = 'dir';
        walk(p, r);
      } else out[r] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  walk(dir, '');
  return out;
}

/** The statuses a backup run or restore ends in. */
export const TERMINAL = ['succeeded', 'failed', 'cancelled', 'server_error'];

/** Polls a run (or restore) until it reaches a terminal status; answers its record. */
export async function waitTerminal(server: TestServer, token: string, url: string, timeoutMs = 20000): Promise<any> {
  return waitFor(async () => {
    const res = await server.api(token).get(url);
    if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
    return TERMINAL.includes(res.body.data.status) ? res.body.data : null;
  }, `${url} to reach a terminal status`, timeoutMs);
}

/** Reads an SSE stream to its end (bounded by `timeoutMs`). */
export async function readSse(url: string, token: string, timeoutMs = 15000): Promise<{ status: number; events: SseEvent[]; raw: string; contentType: string | null }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(timeoutMs) });
  const raw = await res.text();
  const events: SseEvent[] = [];
  for (const block of raw.split('\n\n')) {
    const ev = parseSseBlock(block);
    if (ev) events.push(ev);
  }
  return { status: res.status, events, raw, contentType: res.headers.get('content-type') };
}

/** This process's living children (not zombies) whose command line mentions `word` (/proc). */
export function childrenWith(word: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) !== process.pid || fields[0] === 'Z') continue;
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(word)) out.push(Number(pid));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}
