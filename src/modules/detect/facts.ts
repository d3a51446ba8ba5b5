/**
 * Reading a source tree safely, for detection: targeted reads (the listing of a folder, package
 * manifests, lockfiles, a few entry files), never a walk of node_modules or .git, and every read stays
 * inside the scanned root (symlinks are not followed out). `Facts` is what the rules of
 * detect.rules.ts look at for one app folder.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import type JSON5Module from 'json5';
import type * as Jsonc from 'jsonc-parser';
import type { ParseError } from 'jsonc-parser';
import type * as Toml from 'smol-toml';
import { readTenantFileSync, type TenantFileProblem } from '../../lib/tenant-file.js';

/** Loaded on first use, not at start (docs/decisions.md, "Memory and authenticated reads again"). */
const requireCjs = createRequire(import.meta.url);

/**
 * Reads a small text file inside `root` as a tenant's file (src/lib/tenant-file.ts): null when
 * missing, over 1 MiB, not a regular file, a link, or below a folder that is a link. Synchronous, as
 * detection is: it cannot block (opened O_NONBLOCK, only a bounded regular file is read). A file that
 * is there but ignored is told to `onIgnored`.
 */
function readInside(root: string, rel: string, onIgnored?: (rel: string, problem: TenantFileProblem) => void): string | null {
  const file = readTenantFileSync(root, rel);
  if (file.text === null && file.problem !== 'missing') onIgnored?.(rel, file.problem);
  return file.text;
}

export function listDir(abs: string): { files: Set<string>; dirs: string[] } {
  const files = new Set<string>();
  const dirs: string[] = [];
  try {
    for (const d of readdirSync(abs, { withFileTypes: true })) {
      if (d.isDirectory()) dirs.push(d.name);
      else files.add(d.name);
    }
  } catch {
    /* unreadable: nothing */
  }
  return { files, dirs };
}

export function parseJson(text: string | null): any {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * JSON with comments and trailing commas (`deno.jsonc`, `railpack.json`), parsed with Microsoft's
 * jsonc-parser (VS Code's); null when missing or invalid.
 */
export function parseJsonc(text: string | null): any {
  if (text === null) return null;
  const errors: ParseError[] = [];
  const value = (requireCjs('jsonc-parser') as typeof Jsonc).parse(text, errors, { allowTrailingComma: true, disallowComments: false });
  return errors.length ? null : (value ?? null);
}

/**
 * JSON5 (pnpm's `package.json5`: comments, trailing commas, unquoted keys, single quotes), parsed with
 * the json5 package (the format's reference parser); null when missing, invalid, or not an object.
 */
export function parseJson5Object(text: string | null): any {
  if (text === null) return null;
  try {
    const v = (requireCjs('json5') as typeof JSON5Module).parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

/** Python requirement names (lowercase, normalised `_` → `-`) from requirements.txt, pyproject.toml and Pipfile. */
function pythonDeps(read: (rel: string) => string | null): Set<string> {
  const out = new Set<string>();
  const add = (name: string) => out.add(name.toLowerCase().replace(/_/g, '-').replace(/\[.*$/, ''));
  for (const line of (read('requirements.txt') ?? '').split('\n')) {
    const m = /^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(line);
    if (m && !line.trim().startsWith('-')) add(m[1]!);
  }
  const py = read('pyproject.toml') ?? '';
  // PEP 621 `dependencies = [ "fastapi>=0.1", ... ]` and Poetry `[tool.poetry.dependencies]` tables.
  for (const m of py.matchAll(/^\s*"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*[<>=!~;" ]/gm)) add(m[1]!);
  const poetry = /\[tool\.poetry(?:\.group\.\w+)?\.dependencies\]([\s\S]*?)(?=\n\[|$)/g;
  for (const block of py.matchAll(poetry)) for (const m of block[1]!.matchAll(/^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*=/gm)) add(m[1]!);
  const pipfile = read('Pipfile') ?? '';
  const pf = /\[(?:dev-)?packages\]([\s\S]*?)(?=\n\[|$)/g;
  for (const block of pipfile.matchAll(pf)) for (const m of block[1]!.matchAll(/^\s*"?([A-Za-z0-9][A-Za-z0-9._-]*)"?\s*=/gm)) add(m[1]!);
  out.delete('python');
  return out;
}

/** What the rules look at, for one app folder (`dir`) inside the scanned root (`root`). */
export class Facts {
  readonly files: Set<string>;
  readonly dirs: string[];
  readonly pkg: any;
  readonly deps: Set<string>;
  readonly isPython: boolean;
  private readonly cache = new Map<string, string | null>();

  constructor(
    readonly root: string,
    /** App folder relative to root ('' for the root). */
    readonly rel: string,
    /** Facts of the workspace root, for lockfiles and the packageManager field (self for the root). */
    readonly workspaceRoot: Facts | null,
    /** Told about each file that is there but not read (a link, a FIFO, a device, over 1 MiB): its path below root and why. */
    readonly onIgnored?: (rel: string, problem: TenantFileProblem) => void,
  ) {
    const l = listDir(path.join(root, rel));
    this.files = l.files;
    this.dirs = l.dirs;
    // pnpm reads a package.json5 where there is no package.json, and so does detection.
    this.pkg = this.hasFile('package.json') ? parseJson(this.read('package.json')) : this.hasFile('package.json5') ? parseJson5Object(this.read('package.json5')) : null;
    this.deps = new Set<string>();
    if (this.pkg) {
      for (const k of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']) {
        const d = this.pkg[k];
        if (d && typeof d === 'object') for (const name of Object.keys(d)) this.deps.add(name);
      }
    }
    this.isPython = ['requirements.txt', 'pyproject.toml', 'Pipfile', 'manage.py', 'uv.lock', 'poetry.lock'].some((f) => this.hasFile(f));
    if (this.isPython && !this.pkg) for (const d of pythonDeps((r) => this.read(r))) this.deps.add(d);
  }

  get top(): Facts {
    return this.workspaceRoot ?? this;
  }

  hasFile(name: string): boolean {
    return this.files.has(name);
  }

  read(name: string): string | null {
    if (!this.cache.has(name)) this.cache.set(name, readInside(this.root, path.join(this.rel, name), this.onIgnored));
    return this.cache.get(name)!;
  }

  hasDir(name: string): boolean {
    return this.dirs.includes(name);
  }

  /** A JSON file of the folder, parsed (null when missing or invalid). */
  json(name: string): any {
    return parseJson(this.read(name));
  }

  /** A JSON-with-comments file of the folder, parsed (null when missing or invalid). */
  jsonc(name: string): any {
    return parseJsonc(this.read(name));
  }

  /** A TOML file of the folder, parsed with smol-toml (null when missing or invalid). */
  toml(name: string): Record<string, any> | null {
    const text = this.read(name);
    if (text === null) return null;
    try {
      return (requireCjs('smol-toml') as typeof Toml).parse(text) as Record<string, any>;
    } catch {
      return null;
    }
  }

  /** The names of the folder's files (and, with `dirs`, folders) matching a regular expression. */
  matching(re: RegExp): string[] {
    return [...this.files].filter((n) => re.test(n)).sort();
  }

  /** The listing of a sub-folder of the app (files and folders), read on demand. */
  list(sub: string): { files: Set<string>; dirs: string[] } {
    if (sub.split('/').some((s) => s === '..' || s === '')) return { files: new Set(), dirs: [] };
    return listDir(path.join(this.root, this.rel, sub));
  }

  script(name: string): string | null {
    const s = this.pkg?.scripts?.[name];
    return typeof s === 'string' && s.trim() ? s : null;
  }

  /** The `packageManager` field (`pnpm@9.1.0`), of the app or of the workspace root. */
  packageManagerField(): { name: string; major: number; version: string } | null {
    const v = this.pkg?.packageManager ?? this.top.pkg?.packageManager;
    const m = typeof v === 'string' ? /^(npm|pnpm|yarn|bun)@(\d+)((?:\.\d+){0,2}(?:-[\w.]+)?)/.exec(v) : null;
    return m ? { name: m[1]!, major: Number(m[2]), version: m[2]! + m[3]! } : null;
  }
}
