/**
 * What a Python project depends on, read for the python provider: the requirement names (PEP 503
 * normalised: lowercase, runs of `-_.` as `-`) with their extras, from `requirements.txt` (and the
 * files it includes with `-r`), `pyproject.toml` (`[project] dependencies`, Poetry's
 * `[tool.poetry.dependencies]`) and the `Pipfile` (`[packages]`). Only what an install for
 * production brings in counts (no dev groups): whether gunicorn or uvicorn is there decides the
 * start command. Also: the Python module and variable that construct an app (`app.main:api`).
 */
import type { Facts } from '../facts.js';

/** Requirement name → its extras (`uvicorn[standard]` → uvicorn: ['standard']). */
export type PythonDeps = Map<string, string[]>;

export const normalizeName = (name: string): string => name.toLowerCase().replace(/[-_.]+/g, '-');

const REQUIREMENT = /^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[([^\]]*)\])?/;

/** A PEP 508 requirement string's name and extras (`fastapi[standard]>=0.110`), or null. */
export function parseRequirement(spec: string): { name: string; extras: string[] } | null {
  const m = REQUIREMENT.exec(spec);
  if (!m) return null;
  const extras = (m[2] ?? '').split(',').map((e) => normalizeName(e.trim())).filter(Boolean);
  return { name: normalizeName(m[1]!), extras };
}

function add(deps: PythonDeps, name: string, extras: string[] = []): void {
  const n = normalizeName(name);
  if (n === 'python') return;
  deps.set(n, [...new Set([...(deps.get(n) ?? []), ...extras])]);
}

/** The requirements of a requirements file, following `-r other.txt` includes (a few levels deep). */
function requirementsFile(f: Facts, file: string, deps: PythonDeps, depth: number, seen: Set<string>): void {
  if (depth > 3 || seen.has(file)) return;
  seen.add(file);
  const text = f.read(file);
  if (text === null) return;
  const dir = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : '';
  for (const raw of text.split('\n')) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (!line) continue;
    const include = /^(?:-r|--requirement)(?:\s+|=)(\S+)$/.exec(line);
    if (include) {
      const target = (dir + include[1]!).replace(/^\.\//, '');
      if (!target.split('/').includes('..') && !target.startsWith('/')) requirementsFile(f, target, deps, depth + 1, seen);
      continue;
    }
    if (line.startsWith('-') || /^[a-z+]+:\/\//i.test(line)) continue; // options, constraints, editable installs, bare URLs
    const req = parseRequirement(line);
    if (req) add(deps, req.name, req.extras);
  }
}

/** Poetry and Pipfile tables map a name to a version string or to `{ version, extras = [...] }`. */
function tableDeps(table: unknown, deps: PythonDeps): void {
  if (!table || typeof table !== 'object' || Array.isArray(table)) return;
  for (const [name, spec] of Object.entries(table as Record<string, unknown>)) {
    const extras = spec && typeof spec === 'object' && Array.isArray((spec as { extras?: unknown }).extras) ? ((spec as { extras: unknown[] }).extras.filter((e) => typeof e === 'string') as string[]).map(normalizeName) : [];
    add(deps, name, extras);
  }
}

/** The `[project] dependencies` of pyproject.toml (strings), when the file parses. */
export function pyprojectDependencies(pyproject: Record<string, any> | null): string[] {
  const list = pyproject?.project?.dependencies;
  return Array.isArray(list) ? list.filter((d): d is string => typeof d === 'string') : [];
}

/** Every production requirement the folder's manifests name. */
export function pythonDeps(f: Facts): PythonDeps {
  const deps: PythonDeps = new Map();
  requirementsFile(f, 'requirements.txt', deps, 0, new Set());
  const pyproject = f.toml('pyproject.toml');
  for (const spec of pyprojectDependencies(pyproject)) {
    const req = parseRequirement(spec);
    if (req) add(deps, req.name, req.extras);
  }
  tableDeps(pyproject?.tool?.poetry?.dependencies, deps);
  tableDeps(f.toml('Pipfile')?.packages, deps);
  return deps;
}

/** The app a module builds: `module:variable` (`app.main:api`), or `module:factory()` for a factory. */
export interface PythonApp {
  module: string;
  /** `api`, or `create_app()` for an application factory. */
  target: string;
}

/** The files where an app is usually constructed, in the order they are looked at. */
const APP_FILES = ['main.py', 'app.py', 'start.py', 'bot.py', 'hello.py', 'server.py', 'wsgi.py', 'asgi.py', 'api.py', 'application.py', 'app/main.py', 'app/app.py', 'app/__init__.py', 'src/main.py', 'src/app.py'];

const moduleOf = (file: string): string => file.replace(/\.py$/, '').replace(/\/__init__$/, '').replace(/\//g, '.');

/**
 * The first of the usual files that constructs an app with one of `constructors` (`FastAPI(`,
 * `Flask(`): `api = FastAPI()`, `app: FastAPI = FastAPI(...)`, `app, rt = fast_app()`; with
 * `factory`, a `def create_app(` counts too.
 */
export function findPythonApp(f: Facts, constructors: string[], factory = false): PythonApp | null {
  const ctor = constructors.map((c) => c.replace(/[.]/g, '\\.')).join('|');
  const assign = new RegExp(`^(\\w+)\\s*(?::[^=\\n]*)?=\\s*(?:\\w+\\.)?(?:${ctor})\\(`, 'm');
  const tuple = new RegExp(`^(\\w+)\\s*,\\s*\\w+\\s*=\\s*(?:\\w+\\.)?(?:${ctor})\\(`, 'm');
  for (const file of APP_FILES) {
    const text = f.read(file);
    if (!text) continue;
    const m = assign.exec(text) ?? tuple.exec(text);
    if (m) return { module: moduleOf(file), target: m[1]! };
    if (factory && /^def\s+create_app\s*\(/m.test(text)) return { module: moduleOf(file), target: 'create_app()' };
  }
  return null;
}
