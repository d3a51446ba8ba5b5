/**
 * The python provider: requirements.txt, pyproject.toml (pip, uv, poetry, pdm), Pipfile, or a
 * lone `main.py`/`app.py`. Frameworks: Django, FastAPI, Flask (first match wins).
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { pinned } from './versions.js';

const PY_FILES = ['requirements.txt', 'pyproject.toml', 'Pipfile', 'manage.py', 'uv.lock', 'poetry.lock', 'setup.py'];

interface PythonPm {
  id: string;
  install: string;
  /** Prefix that runs a program of the installed environment (`poetry run `). */
  exec: string;
  program: string;
}

function packageManager(f: Facts): PythonPm | null {
  const pyproject = f.read('pyproject.toml') ?? '';
  if (f.hasFile('uv.lock')) return { id: 'uv', install: 'uv sync --frozen', exec: 'uv run ', program: 'uv' };
  if (f.hasFile('poetry.lock') || /\[tool\.poetry\]/.test(pyproject)) return { id: 'poetry', install: 'poetry install --no-root', exec: 'poetry run ', program: 'poetry' };
  if (f.hasFile('requirements.txt')) return { id: 'pip', install: 'pip install -r requirements.txt', exec: '', program: 'pip' };
  if (f.hasFile('pyproject.toml')) return { id: 'pip', install: 'pip install .', exec: '', program: 'pip' };
  return null;
}

/** A module:variable for the first candidate file that constructs `cls(` (FastAPI/Flask). */
function findApp(f: Facts, cls: string): string | null {
  for (const c of ['main.py', 'app.py', 'server.py', 'api.py', 'wsgi.py', 'asgi.py', 'app/main.py', 'src/main.py', 'app/__init__.py', 'src/app.py']) {
    const text = f.read(c);
    if (!text) continue;
    const m = new RegExp(`^(\\w+)\\s*(?::[^=]*)?=\\s*${cls}\\(`, 'm').exec(text);
    if (m) return `${c.replace(/\.py$/, '').replace(/\/__init__$/, '').replace(/\//g, '.')}:${m[1]}`;
  }
  return null;
}

function asgiStart(f: Facts, pre: string, cls: string): string {
  return `${pre}uvicorn ${findApp(f, cls) ?? 'main:app'} --host 0.0.0.0 --port \${PORT:-8000}`;
}

function wsgiStart(f: Facts, pre: string, cls: string): string {
  const app = findApp(f, cls) ?? 'app:app';
  if (f.deps.has('gunicorn')) return `${pre}gunicorn ${app} --bind 0.0.0.0:\${PORT:-5000}`;
  const [mod] = app.split(':');
  return `${pre}flask --app ${mod} run --host 0.0.0.0 --port \${PORT:-5000}`;
}

function djangoStart(f: Facts, pre: string): string {
  const manage = f.read('manage.py') ?? '';
  const m = /DJANGO_SETTINGS_MODULE['"]\s*,\s*['"]([\w.]+)\.settings/.exec(manage);
  const project = m?.[1];
  if (project && f.deps.has('gunicorn')) return `${pre}gunicorn ${project}.wsgi --bind 0.0.0.0:\${PORT:-8000}`;
  return `${pre}python manage.py runserver 0.0.0.0:\${PORT:-8000}`;
}

export const pythonProvider: Provider = {
  name: 'python',
  detect: (f) => PY_FILES.some((x) => f.hasFile(x)) || ['main.py', 'app.py'].some((x) => f.hasFile(x)),
  plan(f): Detection {
    const pm = packageManager(f);
    const pre = pm?.exec ?? '';
    const d = detection('python', { packageManager: pm?.id ?? null, programs: ['python3', ...(pm ? [pm.program] : [])] });
    const version = pinned(f, ['.python-version'], ['python']);
    if (version) d.version = version;
    if (pm) d.install = [pm.install];
    if (f.deps.has('django') || f.hasFile('manage.py')) {
      d.framework = 'django';
      d.start = djangoStart(f, pre);
      d.build = [`${pre}python manage.py collectstatic --noinput`];
      d.port = 8000;
    } else if (f.deps.has('fastapi')) {
      d.framework = 'fastapi';
      d.start = asgiStart(f, pre, 'FastAPI');
      d.port = 8000;
    } else if (f.deps.has('flask')) {
      d.framework = 'flask';
      d.start = wsgiStart(f, pre, 'Flask');
      d.port = 5000;
    } else {
      const main = ['main.py', 'app.py', 'server.py'].find((x) => f.hasFile(x));
      if (main) {
        d.start = `${pre}python ${main}`;
        d.port = 8000;
      }
    }
    return d;
  },
};
