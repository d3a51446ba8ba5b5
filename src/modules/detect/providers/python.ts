/**
 * The python provider, after Railpack's (core/providers/python): a folder with a `requirements.txt`,
 * `pyproject.toml` or `Pipfile`, or one of the main files Railpack runs (`main.py`, `app.py`,
 * `start.py`, `bot.py`, `hello.py`, `server.py`; a lone `main.py` is a Python app too).
 *
 * Package managers, in Railpack's order: pip (`requirements.txt`), uv (`pyproject.toml` +
 * `uv.lock`), poetry (+ `poetry.lock`), pdm (+ `pdm.lock`), pipenv (`Pipfile`, with or without its
 * lock). Beyond Railpack (which installs nothing there): a `pyproject.toml` with a `[tool.poetry]`
 * table and no lock is poetry's, and any other `pyproject.toml` without a lock is installed with pip.
 *
 * Everything installs into a virtual environment in the app folder (`.venv`), as Railpack's
 * `/app/.venv`: Berth builds and runs on the host, where the system Python is read-only (and
 * PEP 668 refuses `pip install` into it), and the app runs in the release folder, so the
 * environment must live there. Railpack puts `/app/.venv/bin` first on PATH; Berth's commands name
 * the programs in it (`.venv/bin/gunicorn`), so nothing depends on PATH. Where no environment is
 * made (a lone `main.py`), the interpreter is `python3`: a Debian host has `python3` and often no
 * `python`.
 *
 * Start commands, as Railpack's: Django runs its migrations then gunicorn on the project's WSGI
 * application (`WSGI_APPLICATION` of its settings), FastAPI and FastHTML run under uvicorn, Flask
 * under gunicorn, when those servers are dependencies; otherwise the main file runs. Where Railpack
 * would run a server that is not installed (gunicorn for Django) or a file that listens on
 * localhost (`python app.py` for Flask), Berth answers the framework's own server bound to
 * 0.0.0.0:$PORT instead (`manage.py runserver`, `flask run`); a Flask main file that serves on
 * 0.0.0.0 itself, or one with no Flask app in it, runs as Railpack runs it. No collectstatic step,
 * as in Railpack.
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { findPythonApp, pyprojectDependencies, pythonDeps, type PythonApp, type PythonDeps } from './python-deps.js';
import { fileVersion, toolVersion, type Pin } from './versions.js';

/** Files Railpack runs with `python <file>`, in its order. */
export const MAIN_FILES = ['main.py', 'app.py', 'start.py', 'bot.py', 'hello.py', 'server.py'];

const VENV_BIN = '.venv/bin/';
const PORT_ARG = '${PORT:-8000}';

interface PythonPm {
  id: 'pip' | 'uv' | 'poetry' | 'pdm' | 'pipenv';
  install: string[];
  build: string[];
  programs: string[];
}

/** A requirement as one quoted word of a command (null when it cannot be quoted safely). */
const quoted = (spec: string): string | null => (/["$`\\\n]/.test(spec) ? null : `"${spec.trim()}"`);

/** How the folder's dependencies install (null: nothing to install). */
function packageManager(f: Facts): PythonPm | null {
  const venv = `python3 -m venv .venv`;
  if (f.hasFile('requirements.txt')) {
    return { id: 'pip', install: [venv, `${VENV_BIN}pip install -r requirements.txt`], build: [], programs: ['python3'] };
  }
  const pyproject = f.hasFile('pyproject.toml');
  if (pyproject && f.hasFile('uv.lock')) {
    // Railpack syncs the dependencies, then the project itself once the source is there. uv must
    // use the host's Python: one it downloaded would live in the build's HOME, gone when the app runs.
    return {
      id: 'uv',
      install: ['UV_PYTHON_DOWNLOADS=never uv sync --locked --no-dev --no-install-project'],
      build: ['UV_PYTHON_DOWNLOADS=never uv sync --locked --no-dev --no-editable'],
      programs: ['python3', 'uv'],
    };
  }
  const poetry = 'POETRY_VIRTUALENVS_IN_PROJECT=true poetry install --no-interaction --no-ansi --only main --no-root';
  if (pyproject && f.hasFile('poetry.lock')) return { id: 'poetry', install: [poetry], build: [], programs: ['python3', 'poetry'] };
  if (pyproject && f.hasFile('pdm.lock')) return { id: 'pdm', install: ['pdm install --check --prod --no-editable'], build: [], programs: ['python3', 'pdm'] };
  if (f.hasFile('Pipfile')) {
    const cmd = f.hasFile('Pipfile.lock') ? 'pipenv install --deploy --ignore-pipfile' : 'pipenv install --skip-lock';
    return { id: 'pipenv', install: [`PIPENV_VENV_IN_PROJECT=1 ${cmd}`], build: [], programs: ['python3', 'pipenv'] };
  }
  if (!pyproject) return null;
  if (/^\s*\[tool\.poetry\]/m.test(f.read('pyproject.toml') ?? '')) return { id: 'poetry', install: [poetry], build: [], programs: ['python3', 'poetry'] };
  // A pyproject.toml and no lock: a project that declares how it builds is installed as a package;
  // otherwise its dependencies are (pip's fallback build of a flat folder of modules fails).
  const toml = f.toml('pyproject.toml');
  if (toml?.['build-system']) return { id: 'pip', install: [venv, `${VENV_BIN}pip install .`], build: [], programs: ['python3'] };
  const specs = pyprojectDependencies(toml).map(quoted).filter((s): s is string => s !== null);
  if (specs.length) return { id: 'pip', install: [venv, `${VENV_BIN}pip install ${specs.join(' ')}`], build: [], programs: ['python3'] };
  return null;
}

/**
 * The pinned Python version. Railpack reads the Pipfile's `python_version`, then `runtime.txt`,
 * then what mise sees (`mise.toml`, `.tool-versions`, `.python-version`), each later one winning;
 * `requires-python` is not a pin to it, nor here.
 */
function pythonVersion(f: Facts): Pin | null {
  const mise = toolVersion(f, ['python']);
  if (mise) return mise;
  for (const file of ['.python-version', '.python-versions', 'runtime.txt']) {
    const pin = fileVersion(f, file);
    if (pin) return { value: pin.value.split(/\s+/)[0]!, source: file };
  }
  const pipfile = f.read('Pipfile') ?? '';
  const m = /python_full_version\s*=\s*['"]([0-9.]+)['"]/.exec(pipfile) ?? /python_version\s*=\s*['"]([0-9.]+)['"]/.exec(pipfile);
  return m ? { value: m[1]!, source: 'Pipfile' } : null;
}

/** The Django project's WSGI module (`mysite.wsgi`): its settings' `WSGI_APPLICATION`, else `<project>/wsgi.py`. */
function djangoWsgi(f: Facts): string | null {
  const manage = f.read('manage.py') ?? '';
  const settings = /DJANGO_SETTINGS_MODULE['"]?\s*,\s*['"]([\w.]+)['"]/.exec(manage)?.[1] ?? null;
  const candidates: string[] = [];
  if (settings) {
    const p = settings.replace(/\./g, '/');
    candidates.push(`${p}.py`, `${p}/__init__.py`, `${p}/base.py`, `${p.replace(/\/[^/]+$/, '')}/base.py`);
  }
  for (const d of [...f.dirs].sort()) if (!d.startsWith('.')) candidates.push(`${d}/settings.py`, `${d}/settings/__init__.py`, `${d}/settings/base.py`);
  for (const file of candidates) {
    const m = /^\s*WSGI_APPLICATION\s*=\s*['"]([\w.]+)\.application['"]/m.exec(f.read(file) ?? '');
    if (m) return m[1]!;
  }
  const project = settings?.split('.')[0];
  return project && f.read(`${project}/wsgi.py`) !== null ? `${project}.wsgi` : null;
}

/** Whether uvicorn comes with the install (a dependency, or FastAPI's `standard` / `all` extras). */
function hasUvicorn(deps: PythonDeps): boolean {
  const extras = deps.get('fastapi') ?? [];
  return deps.has('uvicorn') || extras.includes('standard') || extras.includes('all');
}

/** Railpack's guess when no file is seen constructing the app: `app` of the main file (`main:app`). */
const mainApp = (main: string | null): PythonApp | null => (main ? { module: main.replace(/\.py$/, ''), target: 'app' } : null);

/**
 * Whether a main file serves its app itself on every interface (`if __name__ == "__main__":` then
 * `app.run(host="0.0.0.0", ...)`), and the port it listens on: the literal `port=8080`, 8000 when
 * it reads $PORT (which Berth sets), else Flask's default 5000. Null when it does not (a bare
 * `app.run()` listens on localhost only).
 */
export function mainServes(text: string | null): { port: number } | null {
  const at = text ? text.search(/^if\s+__name__\s*==\s*['"]__main__['"]\s*:/m) : -1;
  if (at < 0) return null;
  const run = /\.run\s*\(([^)]*(?:\([^)]*\)[^)]*)*)\)/.exec(text!.slice(at));
  if (!run) return null;
  const args = run[1]!;
  const host = /\bhost\s*=\s*(['"])0\.0\.0\.0\1/.test(args) || /\bhost\s*=\s*(?:os\.environ|os\.getenv|getenv)/.test(args);
  if (!host) return null;
  const literal = /\bport\s*=\s*(\d{2,5})\b/.exec(args);
  if (literal && Number(literal[1]) <= 65535) return { port: Number(literal[1]) };
  return { port: /\bport\s*=.*['"]PORT['"]/.test(args) ? 8000 : 5000 };
}

const appRef = (app: PythonApp): string => (app.target.endsWith(')') ? `"${app.module}:${app.target}"` : `${app.module}:${app.target}`);

export const pythonProvider: Provider = {
  name: 'python',
  detect: (f) => ['requirements.txt', 'pyproject.toml', 'Pipfile', ...MAIN_FILES].some((x) => f.hasFile(x)),
  plan(f): Detection {
    const pm = packageManager(f);
    const deps = pythonDeps(f);
    const bin = pm ? VENV_BIN : '';
    const python = pm ? `${VENV_BIN}python` : 'python3';
    const main = MAIN_FILES.find((x) => f.hasFile(x)) ?? null;
    const d = detection('python', { packageManager: pm?.id ?? null, programs: pm?.programs ?? ['python3'] });
    const version = pythonVersion(f);
    if (version) d.version = version;
    if (pm) {
      d.install = [...pm.install];
      d.build = [...pm.build];
    }
    const runMain = () => {
      if (main) d.start = `${python} ${main}`;
    };

    if (f.hasFile('manage.py') && deps.has('django')) {
      d.framework = 'django';
      const wsgi = djangoWsgi(f);
      const server = wsgi && deps.has('gunicorn') ? `${bin}gunicorn --bind 0.0.0.0:${PORT_ARG} ${wsgi}:application` : `${python} manage.py runserver 0.0.0.0:${PORT_ARG}`;
      d.start = `${python} manage.py migrate && ${server}`;
      d.port = 8000;
    } else if (deps.has('flask')) {
      d.framework = 'flask';
      const app = findPythonApp(f, ['Flask'], true);
      const module = app?.module ?? main?.replace(/\.py$/, '');
      // A main file that serves on every interface runs itself (as Railpack: `python main.py`);
      // one with no Flask app in sight is not a Flask app and runs itself too.
      const serves = main ? mainServes(f.read(main)) : null;
      d.port = 8000;
      if (deps.has('gunicorn') && module) d.start = `${bin}gunicorn --bind 0.0.0.0:${PORT_ARG} ${app ? appRef(app) : `${module}:app`}`;
      else if (serves) {
        runMain();
        d.port = serves.port;
      } else if (app) d.start = `${bin}flask --app ${app.module} run --host 0.0.0.0 --port ${PORT_ARG}`;
      else runMain();
      if (!d.start) d.port = null;
    } else if (deps.has('fastapi')) {
      d.framework = 'fastapi';
      const app = findPythonApp(f, ['FastAPI']) ?? mainApp(main);
      if (app && hasUvicorn(deps)) d.start = `${bin}uvicorn ${appRef(app)} --host 0.0.0.0 --port ${PORT_ARG}`;
      else runMain();
      d.port = d.start ? 8000 : null;
    } else if (deps.has('python-fasthtml')) {
      d.framework = 'fasthtml';
      const app = findPythonApp(f, ['FastHTML', 'fast_app']) ?? mainApp(main);
      if (main && app && deps.has('uvicorn')) {
        d.start = `${bin}uvicorn ${appRef(app)} --host 0.0.0.0 --port ${PORT_ARG}`;
        d.port = 8000;
      } else {
        // FastHTML's serve() listens on $PORT (5001 without it) on every interface.
        runMain();
        d.port = d.start ? 5001 : null;
      }
    } else runMain();
    return d;
  },
};
