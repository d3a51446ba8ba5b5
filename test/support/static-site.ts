import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { EdgeServer, type EdgeTarget } from '../../src/edge/proxy.js';
import { RequestLog, type RequestEntry } from '../../src/edge/requests.js';
import { compileRules, type RuleRow } from '../../src/edge/rules.js';
import { prepareStaticSite, type PreparedSite } from '../../src/edge/static-site.js';
import { createLogger } from '../../src/lib/logger.js';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The request log's entry for this request. */
  entry: RequestEntry;
}

/**
 * The static-site suites' shared start (test/edge/static-*.test.ts): a build output with what a
 * static site holds and what it must not serve (dotfiles, symlinks and a FIFO leading outside, a
 * secret beside it), prepared with `prepareStaticSite`, and an edge serving it as four projects:
 * `spa.test` (SPA), `plain.test` (a deny rule on /private), `clean.test` (cleanUrls) and `bare.test`
 * (a site with no 404.html). Requests go one at a time, so each project's log entries come in order.
 */
export interface StaticSite {
  readonly SECRET: string;
  readonly indexHtml: string;
  readonly appJs: string;
  readonly dataBin: Buffer;
  readonly BIG: number;
  readonly tmp: string;
  readonly build: string;
  readonly site: string;
  readonly prepared: PreparedSite;
  readonly hasFifo: boolean;
  readonly edge: EdgeServer;
  readonly port: number;
  /** How many times the edge asked for an upstream (never, for a static site). */
  readonly upstreamAsked: number;
  countRequest(pid: string): number;
  entryOf(pid: string, n: number): Promise<RequestEntry>;
  request(host: string, p: string, opts?: { method?: string; headers?: Record<string, string> }): Promise<Reply>;
}

/** Registers the suite's before/after hooks; the answer's fields are readable once `before` has run. */
export function useStaticSite(): StaticSite {
  let tmp: string;
  let build: string;
  let site: string;
  let bareSite: string;
  let prepared: PreparedSite;
  let hasFifo = false;
  const SECRET = 'TOP-SECRET-OUTSIDE-THE-BUILD';
  const indexHtml = '<!doctype html><html><head><title>Home</title></head><body>' + '<p>Welcome to the static site.</p>\n'.repeat(80) + '</body></html>\n';
  const appJs = 'export function hello(name) { return "hello " + name; }\n'.repeat(300);
  const dataBin = crypto.randomBytes(1000);
  const BIG = 32 * 1024 * 1024;

  let edge: EdgeServer;
  let port: number;
  const requests = new RequestLog(50);
  let upstreamAsked = 0;
  const rule = (kind: string, config: object, p: string | null = null): RuleRow => ({ id: kind, kind, enabled: 1, path: p, config: JSON.stringify(config) });

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'berth-static-'));
    build = path.join(tmp, 'build');
    const w = async (rel: string, body: string | Buffer) => {
      await mkdir(path.dirname(path.join(build, rel)), { recursive: true });
      await writeFile(path.join(build, rel), body);
    };
    await w('index.html', indexHtml);
    await w('about.html', '<h1>About</h1>');
    await w('docs/index.html', '<h1>Docs</h1>');
    await w('404.html', '<h1>Custom 404</h1>');
    await w('assets/index-B3xk9a_Q.js', appJs);
    await w('assets/logo-dark.svg', '<svg xmlns="http://www.w3.org/2000/svg"/>');
    await w('robots.txt', 'User-agent: *\n');
    await w('data.bin', dataBin);
    // The build's own variant is kept as it is; a folder named like a variant is never written over.
    await w('prebuilt.css', 'body { color: red; }\n'.repeat(100));
    await w('prebuilt.css.gz', zlib.gzipSync('body { color: red; }\n'.repeat(100), { level: 1 }));
    await w('odd.js.br/keep.txt', 'a folder named like a variant');
    await w('odd.js', 'let x = 1;\n'.repeat(200));
    await w('big.bin', Buffer.alloc(BIG));
    await w('.env', `SECRET=${SECRET}\n`);
    await w('.git/config', '[core]\n');
    await w('.well-known/security.txt', 'Contact: mailto:security@example.com\n');
    await w('with space %.txt', 'odd name');
    await writeFile(path.join(tmp, 'outside.txt'), SECRET);
    await mkdir(path.join(tmp, 'outside-dir'));
    await writeFile(path.join(tmp, 'outside-dir', 'x.txt'), SECRET);
    await symlink(path.join(tmp, 'outside.txt'), path.join(build, 'secret-link.txt'));
    await symlink(path.join(tmp, 'outside-dir'), path.join(build, 'linkdir'));
    try {
      execFileSync('mkfifo', [path.join(build, 'pipe.txt')]);
      hasFifo = true;
    } catch {
      /* no mkfifo here: the FIFO case is not covered */
    }
    site = path.join(tmp, 'sites', 'd1');
    prepared = await prepareStaticSite(build, site);

    const bareBuild = path.join(tmp, 'bare-build');
    await mkdir(bareBuild);
    await writeFile(path.join(bareBuild, 'index.html'), '<h1>Bare</h1>');
    bareSite = path.join(tmp, 'sites', 'bare');
    await prepareStaticSite(bareBuild, bareSite);

    const deny = compileRules([rule('allow-deny', { action: 'deny', cidrs: ['127.0.0.0/8', '::1/128'] }, '/private')]);
    const targets: Record<string, EdgeTarget> = {
      'spa.test': { projectId: 'spa', unavailable: null, rules: [], static: { root: site, spa: true, cleanUrls: false } },
      'plain.test': { projectId: 'plain', unavailable: null, rules: deny, static: { root: site, spa: false, cleanUrls: false } },
      'clean.test': { projectId: 'clean', unavailable: null, rules: [], static: { root: site, spa: false, cleanUrls: true } },
      'bare.test': { projectId: 'bare', unavailable: null, rules: [], static: { root: bareSite, spa: false, cleanUrls: false } },
    };
    edge = new EdgeServer(
      {
        lookup: (host) => targets[host] ?? null,
        upstream: () => {
          upstreamAsked++;
          throw new Error('a static site has no upstream');
        },
      },
      requests,
      createLogger('silent'),
    );
    port = (await edge.listen('127.0.0.1', 0)).port;
  });

  after(async () => {
    await edge?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const projectOf: Record<string, string> = { 'spa.test': 'spa', 'plain.test': 'plain', 'clean.test': 'clean', 'bare.test': 'bare' };
  /** Every request-log entry per project, in the order recorded, and how many requests each was sent. */
  const logged: Record<string, RequestEntry[]> = {};
  const sent: Record<string, number> = {};
  for (const pid of Object.values(projectOf)) {
    logged[pid] = [];
    sent[pid] = 0;
    requests.subscribe(pid, (e) => logged[pid]!.push(e));
  }

  /** Counts one more request to the project; answers its number (1-based). */
  function countRequest(pid: string): number {
    return ++sent[pid]!;
  }

  /**
   * The log entry of the project's `n`th request. Entries are recorded when the response is done,
   * which may be just after the client has it all: this waits for it.
   */
  async function entryOf(pid: string, n: number): Promise<RequestEntry> {
    for (let i = 0; i < 200 && logged[pid]!.length < n; i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(logged[pid]!.length >= n, `request ${n} of ${pid} was logged`);
    return logged[pid]![n - 1]!;
  }

  /** One request to the edge (sequential within this file, so each project's entries come in request order). */
  async function request(host: string, p: string, opts: { method?: string; headers?: Record<string, string> } = {}): Promise<Reply> {
    const pid = projectOf[host]!;
    const n = countRequest(pid);
    const reply = await new Promise<Omit<Reply, 'entry'>>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: p, method: opts.method ?? 'GET', headers: { host, ...opts.headers }, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
    return { ...reply, entry: await entryOf(pid, n) };
  }

  return {
    SECRET,
    indexHtml,
    appJs,
    dataBin,
    BIG,
    get tmp() {
      return tmp;
    },
    get build() {
      return build;
    },
    get site() {
      return site;
    },
    get prepared() {
      return prepared;
    },
    get hasFifo() {
      return hasFifo;
    },
    get edge() {
      return edge;
    },
    get port() {
      return port;
    },
    get upstreamAsked() {
      return upstreamAsked;
    },
    countRequest,
    entryOf,
    request,
  };
}
