/**
 * `berth deploy [DIR]`: packs the folder (honouring .gitignore files and a `.berthignore`), uploads
 * it through a folder-upload session with a progress bar on stderr, scans it, ensures the project
 * (creating it, or updating `--project` in place) and prints it.
 */
import { createReadStream, createWriteStream, lstatSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { create as tarCreate } from 'tar';
import { ApiError, savedClient, type ApiClient } from './client.js';

// ---------------------------------------------------------------- ignore rules (a gitignore subset)

interface IgnoreRule {
  re: RegExp;
  negate: boolean;
  dirOnly: boolean;
}

/** Compiles one gitignore line (relative to the folder holding the ignore file); null for blanks and comments. */
export function compileIgnoreLine(line: string): IgnoreRule | null {
  let p = line.replace(/\r$/, '');
  if (!p.trim() || p.startsWith('#')) return null;
  p = p.replace(/(?<!\\)\s+$/, '');
  let negate = false;
  if (p.startsWith('!')) {
    negate = true;
    p = p.slice(1);
  } else if (p.startsWith('\\!') || p.startsWith('\\#')) p = p.slice(1);
  const dirOnly = p.endsWith('/');
  if (dirOnly) p = p.replace(/\/+$/, '');
  if (!p) return null;
  const anchored = p.startsWith('/') || p.includes('/');
  p = p.replace(/^\/+/, '');
  let re = '';
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    if (c === '*') {
      if (p[i + 1] === '*' && (i === 0 || p[i - 1] === '/')) {
        if (p[i + 2] === '/') {
          re += '(?:.*/)?'; // `**/`: any folders, or none
          i += 2;
          continue;
        }
        if (i + 2 === p.length) {
          re += '.*'; // trailing `/**`: everything inside
          i += 1;
          continue;
        }
      }
      if (p[i + 1] === '*') i += 1;
      re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = p.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else {
        re += '[' + p.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\') + ']';
        i = end;
      }
    } else if (c === '\\' && i + 1 < p.length) re += '\\' + p[++i];
    else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  const prefix = anchored ? '^' : '^(?:.*/)?';
  return { re: new RegExp(`${prefix}${re}$`), negate, dirOnly };
}

/** The rules of one ignore file, bound to the folder (relative to the packed root) holding it. */
interface IgnoreScope {
  base: string;
  rules: IgnoreRule[];
}

function readRules(file: string): IgnoreRule[] {
  try {
    return readFileSync(file, 'utf8').split('\n').map(compileIgnoreLine).filter((r): r is IgnoreRule => !!r);
  } catch {
    return [];
  }
}

/** Is `rel` (a path relative to the root) ignored by the scopes in effect? The last match wins. */
export function isIgnored(scopes: IgnoreScope[], rel: string, isDir: boolean): boolean {
  let ignored = false;
  for (const s of scopes) {
    const sub = s.base ? (rel.startsWith(s.base + '/') ? rel.slice(s.base.length + 1) : null) : rel;
    if (sub === null) continue;
    for (const r of s.rules) {
      if (r.dirOnly && !isDir) continue;
      if (r.re.test(sub)) ignored = !r.negate;
    }
  }
  return ignored;
}

/** Always left out: version control and installed dependencies (builds install them). */
const ALWAYS = ['.git/', '.hg/', '.svn/', 'node_modules/', '.DS_Store'].map(compileIgnoreLine).filter((r): r is IgnoreRule => !!r);

export interface PackList {
  files: string[];
  skipped: { path: string; reason: string }[];
}

/**
 * Lists the files to pack under `root`: .gitignore files apply to their folder and below, `.berthignore`
 * at the root applies last. Symlinks are never followed out of the folder: a link to a file inside
 * is packed as that file, links to folders or outside are skipped.
 */
export function listFiles(root: string): PackList {
  const realRoot = realpathSync(root);
  const out: PackList = { files: [], skipped: [] };
  const berth = { base: '', rules: readRules(path.join(root, '.berthignore')) };
  const walk = (rel: string, scopes: IgnoreScope[]) => {
    const abs = path.join(root, rel);
    const local = readRules(path.join(abs, '.gitignore'));
    const here = local.length ? [...scopes, { base: rel, rules: local }] : scopes;
    let names: string[];
    try {
      names = readdirSync(abs).sort();
    } catch {
      return;
    }
    for (const name of names) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(path.join(root, r));
      const isDir = st.isDirectory();
      const all = [{ base: '', rules: ALWAYS }, ...here, berth];
      if (isIgnored(all, r, isDir)) continue;
      if (isDir) walk(r, here);
      else if (st.isFile()) out.files.push(r);
      else if (st.isSymbolicLink()) {
        let real: string;
        try {
          real = realpathSync(path.join(root, r));
        } catch {
          out.skipped.push({ path: r, reason: 'broken symlink' });
          continue;
        }
        if (!real.startsWith(realRoot + path.sep)) out.skipped.push({ path: r, reason: 'symlink leading outside the folder' });
        else if (statSync(real).isFile()) out.files.push(r);
        else out.skipped.push({ path: r, reason: 'symlink to a folder' });
      } else out.skipped.push({ path: r, reason: 'not a regular file' });
    }
  };
  walk('', []);
  return out;
}

/** Packs `files` of `root` into a gzipped tarball at `dest`; symlinks in the list are stored as the files they point to. */
export async function packFiles(root: string, files: string[], dest: string): Promise<number> {
  if (!files.length) throw new Error('nothing to deploy: every file is ignored');
  const stream = tarCreate({ gzip: true, cwd: root, portable: true, follow: true, noDirRecurse: true }, files) as unknown as NodeJS.ReadableStream;
  await pipeline(stream, createWriteStream(dest, { mode: 0o600 }));
  return statSync(dest).size;
}

// ---------------------------------------------------------------- upload with a progress bar

function human(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

class Progress {
  private last = 0;
  constructor(private readonly total: number) {}
  update(done: number, force = false): void {
    const now = Date.now();
    if (!force && now - this.last < 100) return;
    this.last = now;
    const width = 30;
    const frac = this.total ? Math.min(1, done / this.total) : 1;
    const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '-');
    const line = `uploading [${bar}] ${String(Math.round(frac * 100)).padStart(3)}% ${human(done)}/${human(this.total)}`;
    process.stderr.write(process.stderr.isTTY ? `\r${line}` : `${line}\n`);
  }
  done(): void {
    this.update(this.total, true);
    if (process.stderr.isTTY) process.stderr.write('\n');
  }
}

interface Target {
  sessionId: string;
  url: string;
  method: string;
  headers: Record<string, string>;
}

function uploadFile(target: Target, file: string, size: number): Promise<any> {
  return new Promise((resolve, reject) => {
    const u = new URL(target.url);
    const mod = u.protocol === 'https:' ? https : http;
    const progress = new Progress(size);
    const req = mod.request(u, { method: target.method, headers: { ...target.headers, 'content-length': String(size) } });
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        if ((res.statusCode ?? 500) >= 400) {
          const e = json?.error;
          reject(new ApiError(res.statusCode ?? 500, e?.code ?? `HTTP_${res.statusCode}`, e?.message ?? text.slice(0, 200), e?.field));
        } else {
          progress.done();
          resolve(json?.data ?? json);
        }
      });
    });
    req.on('error', reject);
    let sent = 0;
    const rs = createReadStream(file);
    rs.on('data', (c) => {
      sent += c.length;
      progress.update(sent);
    });
    rs.on('error', reject);
    rs.pipe(req);
  });
}

// ---------------------------------------------------------------- the command

const CONFIG_KEYS = ['framework', 'installCommand', 'buildCommand', 'startCommand', 'outputDirectory', 'rootDirectory', 'packageManager', 'runtime', 'port'] as const;

export interface DeployOptions {
  name?: string;
  project?: string;
  json?: boolean;
}

export async function deploy(client: ApiClient, dir: string, opts: DeployOptions): Promise<any> {
  const root = path.resolve(dir);
  if (!statSync(root).isDirectory()) throw new Error(`${dir} is not a folder`);
  const list = listFiles(root);
  for (const s of list.skipped) process.stderr.write(`skipped ${s.path}: ${s.reason}\n`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-deploy-'));
  try {
    const archive = path.join(tmp, 'source.tar.gz');
    const size = await packFiles(root, list.files, archive);
    process.stderr.write(`packed ${list.files.length} files (${human(size)})\n`);
    const name = (opts.name ?? path.basename(root)).slice(0, 100) || 'project';
    const target = await client.request<Target>('POST', '/api/projects/folder/session', { name, sizeBytes: size, ...(opts.project ? { projectId: opts.project } : {}) });
    await uploadFile(target, archive, size);
    const scan = await client.request<Record<string, unknown>>('POST', `/api/projects/folder/scan/${target.sessionId}`);
    process.stderr.write(`detected ${scan.framework ?? scan.runtime ?? 'unknown'}${scan.packageManager ? ` (${scan.packageManager})` : ''}\n`);
    const config: Record<string, unknown> = {};
    for (const k of CONFIG_KEYS) if (scan[k] !== null && scan[k] !== undefined && scan[k] !== '') config[k] = scan[k];
    const body = { ...config, ...(opts.project ? { projectId: opts.project } : { name }), gitProvider: 'upload', sessionId: target.sessionId };
    return await client.request<any>('POST', '/api/projects/ensure', body);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

export function registerDeployCommand(program: Command): void {
  program
    .command('deploy [dir]')
    .description('upload a folder (honouring .gitignore and .berthignore), detect its build and create or update the project')
    .option('--name <name>', 'project name (default: the folder name)')
    .option('--project <id>', 'update this project in place instead of creating one')
    .option('--json', 'print the project as JSON')
    .action(async (dir: string | undefined, opts: DeployOptions) => {
      try {
        const p = await deploy(savedClient(), dir ?? '.', opts);
        if (opts.json) console.log(JSON.stringify(p, null, 2));
        else {
          console.log(`project ${p.name} (${p.id})`);
          console.log(`  framework: ${p.config?.framework ?? '-'}  runtime: ${p.config?.runtime ?? '-'}  package manager: ${p.config?.packageManager ?? '-'}`);
          console.log(`  build: ${p.config?.buildCommand ?? '-'}  start: ${p.config?.startCommand ?? '-'}`);
          if (p.routes?.freeDomain) console.log(`  domain: ${p.routes.freeDomain}`);
          console.log(`  source: uploaded folder; deploy it with POST /api/deployments { "projectId": "${p.id}" }`);
        }
      } catch (e) {
        if (e instanceof ApiError) console.error(`error: ${e.message}${e.field ? ` (${e.field})` : ''} [${e.code}]`);
        else console.error(`error: ${(e as Error)?.message ?? e}`);
        process.exit(1);
      }
    });
}
