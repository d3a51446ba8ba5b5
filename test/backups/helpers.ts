import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Actor } from '../../src/authz/actor.js';
import { createProject } from '../../src/modules/projects/projects.service.js';
import type { TestUser } from '../support/factories.js';
import type { TestServer } from '../support/harness.js';
import { tempDir } from '../support/harness.js';

/** Builds the actor of a test user (for calling services that write real rows). */
export function actorOf(u: TestUser): Actor {
  return { userId: u.userId, email: u.email, orgId: u.orgId, role: u.role, scopes: null, via: 'token', grants: [] };
}

/** A real project (with its `data` volume service) made through the projects service. */
export async function makeProject(server: TestServer, owner: TestUser, name = `p-${randomBytes(3).toString('hex')}`): Promise<{ id: string; dataServiceId: string; volume: string }> {
  const p = await createProject(server.ctx, actorOf(owner), { name } as never);
  const svc = await server.ctx.db.selectFrom('services').selectAll().where('projectId', '=', p.id).where('name', '=', 'data').executeTakeFirstOrThrow();
  return { id: p.id, dataServiceId: svc.id, volume: path.join(server.dataDir, 'volumes', p.id, 'data') };
}

/** A local destination in a fresh folder. */
export async function makeLocalDestination(server: TestServer, token: string, dir = tempDir('berth-dest-')): Promise<{ id: string; dir: string }> {
  const res = await server.api(token).post('/api/backup-destinations', { name: 'local', kind: 'local', path: dir });
  if (res.status !== 201) throw new Error(`destination create failed: ${res.status} ${res.text}`);
  return { id: res.body.data.id, dir };
}

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

/** Polls a run (or restore) until it reaches a terminal status. */
export async function waitTerminal(server: TestServer, token: string, url: string, timeoutMs = 20000): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const res = await server.api(token).get(url);
    if (res.status === 200 && ['succeeded', 'failed', 'cancelled', 'server_error'].includes(res.body.data.status)) return res.body.data;
    if (Date.now() > end) throw new Error(`timed out waiting for ${url}: ${res.status} ${res.text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface SseEvent {
  id?: string;
  event: string;
  data: any;
}

/** Reads an SSE stream to its end (bounded by `timeoutMs`). */
export async function readSse(url: string, token: string, timeoutMs = 15000): Promise<{ status: number; events: SseEvent[]; raw: string; contentType: string | null }> {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(timeoutMs) });
  const raw = await res.text();
  const events: SseEvent[] = [];
  for (const block of raw.split('\n\n')) {
    const lines = block.split('\n').filter((l) => l && !l.startsWith(':'));
    if (!lines.length) continue;
    const ev: SseEvent = { event: 'message', data: '' };
    const data: string[] = [];
    for (const l of lines) {
      if (l.startsWith('id: ')) ev.id = l.slice(4);
      else if (l.startsWith('event: ')) ev.event = l.slice(7);
      else if (l.startsWith('data: ')) data.push(l.slice(6));
    }
    try {
      ev.data = JSON.parse(data.join('\n'));
    } catch {
      ev.data = data.join('\n');
    }
    events.push(ev);
  }
  return { status: res.status, events, raw, contentType: res.headers.get('content-type') };
}

/** Retries `check` until it passes (bounded); retention runs right after a run turns terminal. */
export async function eventually(check: () => Promise<void>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (e) {
      if (Date.now() > end) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
