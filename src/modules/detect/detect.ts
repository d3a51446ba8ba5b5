/**
 * Build detection: reads a project folder and answers runtime, framework, package manager, install,
 * build and start commands, output directory and port, for the folder and for each app of a
 * monorepo workspace. The rules are the table in detect.rules.ts; this file only gathers facts and
 * applies them.
 *
 * Reads are targeted (the root listing, package manifests, lockfiles, a few entry files and the
 * workspace folders the manifests name), never a walk of node_modules or .git, so a scan of a large
 * tree costs a few dozen file reads. Every read stays inside `root` (symlinks are not followed out).
 */
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { FRAMEWORK_RULES, IGNORED_DIRS, PACKAGE_MANAGER_RULES, RUNTIME_MARKERS, type FrameworkRule, type PackageManagerRule, type Runtime } from './detect.rules.js';

export interface DetectedApp {
  /** Folder of the app, relative to the scanned root ('' is the root itself); commands run there. */
  rootDirectory: string;
  name: string | null;
  runtime: Runtime;
  framework: string | null;
  packageManager: string | null;
  installCommand: string | null;
  buildCommand: string | null;
  startCommand: string | null;
  outputDirectory: string | null;
  port: number | null;
}

export interface ScanResult extends DetectedApp {
  /** `npm`, `pnpm`, `yarn`, `bun` (+ `turbo`) workspaces, or null for a single app. */
  monorepo: string | null;
  /** The deployable apps of a workspace (the top-level fields describe the first one). */
  apps: DetectedApp[];
}

const MAX_READ = 1024 * 1024;

/** Reads a small text file inside `root`; null when missing, too big, not a file, or a link out. */
function readInside(root: string, rel: string): string | null {
  const abs = path.join(root, rel);
  try {
    const st = lstatSync(abs);
    if (st.isSymbolicLink()) {
      const real = realpathSync(abs);
      const realRoot = realpathSync(root);
      if (real !== realRoot && !real.startsWith(realRoot + path.sep)) return null;
      if (!statSync(real).isFile()) return null;
    } else if (!st.isFile()) return null;
    if (st.size > MAX_READ) return null;
    return readFileSync(abs, 'utf8');
  } catch {
    return null;
  }
}

function listDir(abs: string): { files: Set<string>; dirs: string[] } {
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

function parseJson(text: string | null): any {
  if (!text) return null;
  try {
    return JSON.parse(text);
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
  ) {
    const l = listDir(path.join(root, rel));
    this.files = l.files;
    this.dirs = l.dirs;
    this.pkg = this.hasFile('package.json') ? parseJson(this.read('package.json')) : null;
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

  hasRootFile(name: string): boolean {
    return this.top.hasFile(name) || this.hasFile(name);
  }

  read(name: string): string | null {
    if (!this.cache.has(name)) this.cache.set(name, readInside(this.root, path.join(this.rel, name)));
    return this.cache.get(name)!;
  }

  script(name: string): string | null {
    const s = this.pkg?.scripts?.[name];
    return typeof s === 'string' && s.trim() ? s : null;
  }

  /** The `packageManager` field (`pnpm@9.1.0`), of the app or of the workspace root. */
  packageManagerField(): { name: string; major: number } | null {
    const v = this.pkg?.packageManager ?? this.top.pkg?.packageManager;
    const m = typeof v === 'string' ? /^(npm|pnpm|yarn|bun)@(\d+)/.exec(v) : null;
    return m ? { name: m[1]!, major: Number(m[2]) } : null;
  }

  yarnBerry(): boolean {
    const f = this.packageManagerField();
    if (f?.name === 'yarn') return f.major >= 2;
    return this.hasRootFile('.yarnrc.yml');
  }

  /** `node <entry>` for a plain Node server without a start script. */
  nodeEntryStart(): string | null {
    const main = typeof this.pkg?.main === 'string' ? this.pkg.main : null;
    for (const c of [main, 'server.js', 'index.js', 'app.js', 'main.js', 'server.mjs', 'index.mjs', 'src/index.js', 'src/server.js']) {
      if (!c) continue;
      if (this.read(c) !== null) return `node ${c.replace(/^\.\//, '')}`;
    }
    return main ? `node ${main}` : null;
  }

  /** Angular's output folder from angular.json (the application builder adds `/browser`). */
  angularOutput(): string | null {
    const a = parseJson(this.read('angular.json'));
    const projects = a?.projects && typeof a.projects === 'object' ? a.projects : {};
    const name = (typeof a?.defaultProject === 'string' && projects[a.defaultProject] ? a.defaultProject : Object.keys(projects)[0]) as string | undefined;
    const build = name ? projects[name]?.architect?.build : undefined;
    const out = build?.options?.outputPath;
    const modern = typeof build?.builder === 'string' && /:application$/.test(build.builder);
    if (typeof out === 'string') return modern ? `${out.replace(/\/$/, '')}/browser` : out;
    if (out && typeof out === 'object' && typeof out.base === 'string') return `${out.base}/${out.browser ?? 'browser'}`.replace(/\/$/, '');
    return name ? `dist/${name}${modern ? '/browser' : ''}` : 'dist';
  }

  private pyPrefix(): string {
    const pm = detectPackageManager(this);
    const exec = pm?.exec;
    return exec ? `${exec} ` : '';
  }

  /** A module:variable for the first candidate file that constructs `cls(` (FastAPI/Flask). */
  private findApp(cls: string): string | null {
    for (const c of ['main.py', 'app.py', 'server.py', 'api.py', 'wsgi.py', 'asgi.py', 'app/main.py', 'src/main.py', 'app/__init__.py', 'src/app.py']) {
      const text = this.read(c);
      if (!text) continue;
      const m = new RegExp(`^(\\w+)\\s*(?::[^=]*)?=\\s*${cls}\\(`, 'm').exec(text);
      if (m) return `${c.replace(/\.py$/, '').replace(/\/__init__$/, '').replace(/\//g, '.')}:${m[1]}`;
    }
    return null;
  }

  asgiStart(cls: string): string {
    const app = this.findApp(cls) ?? 'main:app';
    return `${this.pyPrefix()}uvicorn ${app} --host 0.0.0.0 --port \${PORT:-8000}`;
  }

  wsgiStart(cls: string): string {
    const app = this.findApp(cls) ?? 'app:app';
    if (this.deps.has('gunicorn')) return `${this.pyPrefix()}gunicorn ${app} --bind 0.0.0.0:\${PORT:-5000}`;
    const [mod] = app.split(':');
    return `${this.pyPrefix()}flask --app ${mod} run --host 0.0.0.0 --port \${PORT:-5000}`;
  }

  djangoStart(): string {
    const manage = this.read('manage.py') ?? '';
    const m = /DJANGO_SETTINGS_MODULE['"]\s*,\s*['"]([\w.]+)\.settings/.exec(manage);
    const project = m?.[1];
    if (project && this.deps.has('gunicorn')) return `${this.pyPrefix()}gunicorn ${project}.wsgi --bind 0.0.0.0:\${PORT:-8000}`;
    return `${this.pyPrefix()}python manage.py runserver 0.0.0.0:\${PORT:-8000}`;
  }
}

function detectPackageManager(f: Facts): PackageManagerRule | null {
  const language = f.pkg ? 'node' : f.isPython ? 'python' : f.hasFile('go.mod') ? 'go' : null;
  if (!language) return null;
  const rules = PACKAGE_MANAGER_RULES.filter((r) => r.language === language);
  if (language === 'node') {
    const field = f.packageManagerField();
    if (field) return rules.find((r) => r.id === field.name) ?? null;
  }
  for (const r of rules) if (r.lockfiles.some((l) => f.hasFile(l) || f.top.hasFile(l))) return r;
  if (language === 'python' && /\[tool\.poetry\]/.test(f.read('pyproject.toml') ?? '')) return rules.find((r) => r.id === 'poetry')!;
  if (language === 'python' && f.hasFile('pyproject.toml')) return rules.find((r) => r.id === 'pip')!;
  return language === 'node' ? rules.find((r) => r.id === 'npm')! : rules[0] ?? null;
}

function matchFramework(f: Facts): FrameworkRule | null {
  const language = f.pkg ? 'node' : f.isPython ? 'python' : null;
  if (!language) return null;
  for (const rule of FRAMEWORK_RULES) {
    if (rule.language !== language) continue;
    const hit = (rule.deps ?? []).some((d) => f.deps.has(d)) || (rule.files ?? []).some((x) => f.hasFile(x));
    if (hit && (!rule.when || rule.when(f))) return rule;
  }
  return null;
}

function portFrom(script: string | null): number | null {
  if (!script) return null;
  const m = /(?:--port[= ]|-p\s+|PORT=)(\d{2,5})\b/.exec(script);
  const n = m ? Number(m[1]) : NaN;
  return n >= 1 && n <= 65535 ? n : null;
}

function value<T>(v: T | ((f: Facts) => T) | undefined, f: Facts): T | undefined {
  return typeof v === 'function' ? (v as (f: Facts) => T)(f) : v;
}

/** Detects one app folder. */
export function detectApp(f: Facts): DetectedApp {
  const base: DetectedApp = {
    rootDirectory: f.rel,
    name: typeof f.pkg?.name === 'string' ? f.pkg.name.slice(0, 214) : null,
    runtime: 'unknown',
    framework: null,
    packageManager: null,
    installCommand: null,
    buildCommand: null,
    startCommand: null,
    outputDirectory: null,
    port: null,
  };
  const pm = detectPackageManager(f);
  const rule = matchFramework(f);
  if (pm) {
    base.packageManager = pm.id;
    base.installCommand = typeof pm.install === 'function' ? pm.install(f) : pm.install;
  }
  const sub = (cmd: string | null | undefined): string | null => {
    if (!cmd) return null;
    const exec = pm?.exec ?? 'npx';
    return cmd.replace('{pm} ', exec ? `${exec} ` : '');
  };
  if (f.pkg) {
    base.runtime = 'node';
    const run = pm?.run ?? 'npm run';
    const build = f.script('build');
    const start = f.script('start');
    base.framework = rule?.id ?? null;
    base.buildCommand = build ? `${run} build` : sub(rule?.build ?? null);
    if (!rule || rule.kind === 'server') {
      base.startCommand = start ? `${run} start` : sub(value(rule?.start, f) ?? null) ?? (rule ? null : f.nodeEntryStart());
      base.port = portFrom(start) ?? rule?.port ?? 3000;
      if (!base.startCommand && !rule) base.port = null;
    }
    base.outputDirectory = value(rule?.output, f) ?? null;
    if (/^bun\s/.test(start ?? '') || (pm?.id === 'bun' && !rule && !start)) base.runtime = 'bun';
    if (!rule && !start && !base.startCommand && f.hasFile('index.html')) {
      // A package.json that only carries tooling around a static site.
      base.runtime = 'static';
      base.outputDirectory = build ? 'dist' : '.';
    }
  } else if (f.isPython) {
    base.runtime = 'python';
    base.framework = rule?.id ?? null;
    base.startCommand = value(rule?.start, f) ?? null;
    base.port = rule?.port ?? null;
    if (!rule) {
      const main = ['main.py', 'app.py', 'server.py'].find((x) => f.hasFile(x));
      if (main) {
        base.startCommand = `${pm?.exec ? pm.exec + ' ' : ''}python ${main}`;
        base.port = 8000;
      }
    }
    if (rule?.id === 'django') base.buildCommand = `${pm?.exec ? pm.exec + ' ' : ''}python manage.py collectstatic --noinput`;
  } else if (f.hasFile('go.mod')) {
    base.runtime = 'go';
    base.buildCommand = 'go build -o app .';
    base.startCommand = './app';
    base.port = 8080;
  } else {
    for (const m of RUNTIME_MARKERS) {
      if (m.runtime === 'docker') continue;
      if (m.files.some((x) => f.hasFile(x))) {
        base.runtime = m.runtime;
        break;
      }
    }
    if (base.runtime === 'static') base.outputDirectory = '.';
    if (base.runtime === 'deno') {
      base.startCommand = `deno run --allow-net --allow-env --allow-read ${['main.ts', 'server.ts', 'mod.ts'].find((x) => f.hasFile(x)) ?? 'main.ts'}`;
      base.port = 8000;
    }
  }
  // A Dockerfile says how to build and run: it wins over everything else.
  if (f.hasFile('Dockerfile')) {
    const docker = f.read('Dockerfile') ?? '';
    const expose = /^\s*EXPOSE\s+(\d{1,5})/im.exec(docker);
    base.runtime = 'docker';
    base.installCommand = null;
    base.buildCommand = null;
    base.startCommand = null;
    base.outputDirectory = null;
    base.port = expose ? Number(expose[1]) : (base.port ?? 3000);
  }
  return base;
}

/** Expands workspace globs (`apps/*`, `packages/**`, `services/api`) into folders holding a package.json. */
function expandWorkspaces(root: string, patterns: string[]): string[] {
  const out = new Set<string>();
  const neg = patterns.filter((p) => p.startsWith('!')).map((p) => p.slice(1).replace(/\/+$/, ''));
  const walk = (rel: string, segs: string[], depth: number) => {
    if (depth > 6 || out.size > 500) return;
    if (!segs.length) {
      if (listDir(path.join(root, rel)).files.has('package.json')) out.add(rel);
      return;
    }
    const [seg, ...rest] = segs as [string, ...string[]];
    if (seg === '**') {
      walk(rel, rest, depth);
      for (const d of listDir(path.join(root, rel)).dirs) if (!IGNORED_DIRS.has(d) && !d.startsWith('.')) walk(rel ? `${rel}/${d}` : d, segs, depth + 1);
      return;
    }
    if (seg.includes('*')) {
      const re = new RegExp('^' + seg.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*') + '$');
      for (const d of listDir(path.join(root, rel)).dirs) if (re.test(d) && !IGNORED_DIRS.has(d) && !d.startsWith('.')) walk(rel ? `${rel}/${d}` : d, rest, depth + 1);
      return;
    }
    if (seg === '.' || seg === '') return walk(rel, rest, depth);
    if (seg === '..' || IGNORED_DIRS.has(seg)) return;
    walk(rel ? `${rel}/${seg}` : seg, rest, depth + 1);
  };
  for (const p of patterns) {
    if (p.startsWith('!') || p.includes('..') || path.isAbsolute(p)) continue;
    walk('', p.replace(/\/+$/, '').split('/'), 0);
  }
  return [...out].filter((d) => d && !neg.some((n) => n === d || (n.includes('*') && new RegExp('^' + n.replace(/\*\*/g, '.+').replace(/\*/g, '[^/]+') + '$').test(d)))).sort();
}

/** Workspace patterns from package.json `workspaces` or pnpm-workspace.yaml. */
function workspacePatterns(f: Facts): string[] {
  const ws = f.pkg?.workspaces;
  const fromPkg = Array.isArray(ws) ? ws : Array.isArray(ws?.packages) ? ws.packages : [];
  const yaml = f.read('pnpm-workspace.yaml') ?? '';
  const fromPnpm: string[] = [];
  const block = /^packages:\s*\n((?:\s+-.*\n?|\s*#.*\n?|\s*\n)*)/m.exec(yaml);
  if (block) for (const m of block[1]!.matchAll(/^\s+-\s*['"]?([^'"#\n]+?)['"]?\s*$/gm)) fromPnpm.push(m[1]!);
  return [...fromPkg, ...fromPnpm].filter((p): p is string => typeof p === 'string' && p.length < 200).slice(0, 100);
}

/** Scans a project folder: the app at its root, or the apps of its workspace. */
export function scanProject(root: string): ScanResult {
  const top = new Facts(root, '', null);
  const patterns = top.pkg ? workspacePatterns(top) : [];
  if (patterns.length && !top.hasFile('Dockerfile')) {
    const apps: DetectedApp[] = [];
    for (const rel of expandWorkspaces(root, patterns)) {
      const app = detectApp(new Facts(root, rel, top));
      // A workspace package is an app when it is something to run or serve, not a library.
      if (app.framework || app.startCommand || app.runtime === 'docker') apps.push(app);
    }
    const pm = detectPackageManager(top)?.id ?? 'npm';
    const monorepo = top.hasFile('turbo.json') || top.deps.has('turbo') ? 'turbo' : pm;
    if (apps.length) {
      apps.sort((a, b) => rank(a) - rank(b) || a.rootDirectory.localeCompare(b.rootDirectory));
      return { ...apps[0]!, monorepo, apps };
    }
    return { ...detectApp(top), monorepo, apps: [] };
  }
  const app = detectApp(top);
  return { ...app, monorepo: null, apps: [app] };
}

/** Which workspace app is the main one: web front-ends in apps/ first. */
function rank(a: DetectedApp): number {
  let r = 10;
  if (a.rootDirectory.startsWith('apps/')) r -= 4;
  if (/(^|\/)(web|www|site|frontend|app)$/.test(a.rootDirectory)) r -= 3;
  if (a.framework) r -= 1;
  return r;
}
