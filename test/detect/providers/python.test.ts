import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { planBuild } from '../../../src/modules/detect/build-plan.js';
import { mainServes } from '../../../src/modules/detect/providers/python.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

const VENV = 'python3 -m venv .venv';
const FASTAPI = 'from fastapi import FastAPI\n\napp = FastAPI()\n';

describe('python provider', () => {
  const cases = casesOf('python');
  it('has its eleven corpus cases', () => assert.equal(cases.length, 11, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does`, () => expectPlan(name));

  it('plans commands the runner accepts (no shell operators, no globs)', () => {
    for (const name of cases) {
      const { plan } = scanProject(path.join(FIXTURES, name));
      for (const cmd of [...plan.install, ...plan.build, ...(plan.start ? [plan.start] : [])]) assert.doesNotThrow(() => parseCommand(cmd, { PORT: '8000' }), `${name}: ${cmd}`);
    }
  });

  it('needs python3 and the package manager on the host; a lone main.py needs python3 only', () => {
    const programs = (dir: string) => planBuild(dir, dir).programs;
    assert.deepEqual(programs(path.join(FIXTURES, 'python-main')), ['python3']);
    assert.deepEqual(programs(path.join(FIXTURES, 'django')), ['python3'], 'pip runs from the virtual environment');
    assert.deepEqual(programs(path.join(FIXTURES, 'fastapi')), ['python3', 'uv']);
    assert.deepEqual(programs(path.join(FIXTURES, 'flask')), ['python3', 'poetry']);
    assert.deepEqual(programs(path.join(FIXTURES, 'python-pdm')), ['python3', 'pdm']);
    assert.deepEqual(programs(path.join(FIXTURES, 'python-pipenv')), ['python3', 'pipenv']);
  });

  it('a lone app.py is a Python app too', () => {
    const got = scanProject(app({ 'app.py': 'print("hi")\n' }));
    assert.equal(got.runtime, 'python');
    assert.deepEqual(got.plan, { runtime: 'python', install: [], build: [], start: 'python3 app.py' });
  });

  it('an invalid pyproject.toml installs nothing and still runs the main file', () => {
    const got = scanProject(app({ 'pyproject.toml': '[project\nname = "x"\n', 'main.py': 'print(1)\n' }));
    assert.equal(got.runtime, 'python');
    assert.equal(got.packageManager, null);
    assert.deepEqual(got.plan, { runtime: 'python', install: [], build: [], start: 'python3 main.py' });
  });

  it('a pyproject.toml without a lock: a declared build system installs the project, else its dependencies', () => {
    const pkg = scanProject(app({ 'pyproject.toml': '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n[project]\nname = "x"\ndependencies = ["click"]\n', 'main.py': '' }));
    assert.deepEqual(pkg.plan.install, [VENV, '.venv/bin/pip install .']);
    assert.equal(pkg.plan.start, '.venv/bin/python main.py');
    const deps = scanProject(app({ 'pyproject.toml': '[project]\nname = "x"\ndependencies = ["click>=8", "pywin32; sys_platform == \'win32\'", "bad\\"quote"]\n', 'main.py': '' }));
    assert.deepEqual(deps.plan.install, [VENV, `.venv/bin/pip install "click>=8" "pywin32; sys_platform == 'win32'"`]);
    for (const cmd of deps.plan.install) assert.doesNotThrow(() => parseCommand(cmd));
  });

  it('a [tool.poetry] table without a lock is poetry; a Pipfile without a lock skips locking', () => {
    const poetry = scanProject(app({ 'pyproject.toml': '[tool.poetry]\nname = "x"\n\n[tool.poetry.dependencies]\npython = "^3.12"\n', 'main.py': '' }));
    assert.equal(poetry.packageManager, 'poetry');
    assert.deepEqual(poetry.plan.install, ['POETRY_VIRTUALENVS_IN_PROJECT=true poetry install --no-interaction --no-ansi --only main --no-root']);
    const pipenv = scanProject(app({ Pipfile: '[packages]\nflask = "*"\n', 'app.py': 'from flask import Flask\napp = Flask(__name__)\n' }));
    assert.deepEqual(pipenv.plan.install, ['PIPENV_VENV_IN_PROJECT=1 pipenv install --skip-lock']);
    assert.equal(pipenv.plan.start, '.venv/bin/flask --app app run --host 0.0.0.0 --port ${PORT:-8000}');
  });

  it('requirements.txt wins over a uv lock, as in Railpack', () => {
    const got = scanProject(app({ 'requirements.txt': 'requests\n', 'pyproject.toml': '[project]\nname = "x"\n', 'uv.lock': 'version = 1\n', 'main.py': '' }));
    assert.equal(got.packageManager, 'pip');
    assert.deepEqual(got.plan.install, [VENV, '.venv/bin/pip install -r requirements.txt']);
  });

  it('follows -r includes to find Django and gunicorn, and finds WSGI_APPLICATION in split settings', () => {
    const got = scanProject(app({
      'requirements.txt': '-r requirements/prod.txt\n',
      'requirements/prod.txt': '-r base.txt\ngunicorn==22.0.0  # the server\n',
      'requirements/base.txt': 'Django==5.0\n',
      'manage.py': 'os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")\n',
      'config/settings/base.py': "WSGI_APPLICATION = 'config.wsgi.application'\n",
      'config/settings/production.py': 'from .base import *\n',
    }));
    assert.equal(got.framework, 'django');
    assert.equal(got.plan.start, '.venv/bin/python manage.py migrate && .venv/bin/gunicorn --bind 0.0.0.0:${PORT:-8000} config.wsgi:application');
  });

  it('Django without a WSGI module to find runs manage.py runserver; manage.py without Django is not Django', () => {
    const got = scanProject(app({ 'requirements.txt': 'django\ngunicorn\n', 'manage.py': 'import sys\n' }));
    assert.equal(got.plan.start, '.venv/bin/python manage.py migrate && .venv/bin/python manage.py runserver 0.0.0.0:${PORT:-8000}');
    const notDjango = scanProject(app({ 'requirements.txt': 'requests\n', 'manage.py': 'import sys\n', 'main.py': '' }));
    assert.equal(notDjango.framework, null);
    assert.equal(notDjango.plan.start, '.venv/bin/python main.py');
  });

  it('reads Python dependencies even when a package.json sits beside them (assets built with npm)', () => {
    const got = scanProject(app({
      'package.json': JSON.stringify({ name: 'assets', devDependencies: { tailwindcss: '3' } }),
      'requirements.txt': 'Django\ngunicorn\n',
      'manage.py': 'os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site1.settings")\n',
      'site1/wsgi.py': 'application = None\n',
    }));
    assert.equal(got.runtime, 'python');
    assert.equal(got.framework, 'django');
    assert.match(got.plan.start ?? '', /gunicorn --bind 0\.0\.0\.0:\$\{PORT:-8000\} site1\.wsgi:application$/);
  });

  it('FastAPI runs under uvicorn when installed (also through fastapi[standard]), else its main file', () => {
    const noServer = scanProject(app({ 'requirements.txt': 'fastapi\n', 'main.py': FASTAPI }));
    assert.equal(noServer.framework, 'fastapi');
    assert.equal(noServer.plan.start, '.venv/bin/python main.py');
    const standard = scanProject(app({ 'requirements.txt': 'fastapi[standard]>=0.112\n', 'server.py': 'import fastapi\nserver: fastapi.FastAPI = fastapi.FastAPI(title="x")\n' }));
    assert.equal(standard.plan.start, '.venv/bin/uvicorn server:server --host 0.0.0.0 --port ${PORT:-8000}');
    assert.equal(standard.port, 8000);
    const guessed = scanProject(app({ 'requirements.txt': 'fastapi\nuvicorn\n', 'main.py': 'from api import build\napp = build()\n' }));
    assert.equal(guessed.plan.start, '.venv/bin/uvicorn main:app --host 0.0.0.0 --port ${PORT:-8000}', "Railpack's main:app");
  });

  it('a Flask application factory runs under gunicorn, quoted for the runner', () => {
    const got = scanProject(app({ 'requirements.txt': 'Flask\ngunicorn\n', 'app/__init__.py': 'from flask import Flask\n\ndef create_app():\n    return Flask(__name__)\n' }));
    assert.equal(got.plan.start, '.venv/bin/gunicorn --bind 0.0.0.0:${PORT:-8000} "app:create_app()"');
    assert.deepEqual(parseCommand(got.plan.start!, { PORT: '8000' })[0]!.argv, ['.venv/bin/gunicorn', '--bind', '0.0.0.0:8000', 'app:create_app()']);
  });

  it('FastHTML with uvicorn runs under it', () => {
    const got = scanProject(app({ 'requirements.txt': 'python-fasthtml\nuvicorn\n', 'main.py': 'from fasthtml.common import *\napp, rt = fast_app()\n' }));
    assert.equal(got.framework, 'fasthtml');
    assert.equal(got.plan.start, '.venv/bin/uvicorn main:app --host 0.0.0.0 --port ${PORT:-8000}');
  });

  it('pins the version from mise first, then .python-version, runtime.txt, the Pipfile; never requires-python', () => {
    const files = { Pipfile: '[requires]\npython_version = "3.10"\n', 'runtime.txt': 'python-3.11.9\n', '.python-version': '3.12\n', 'mise.toml': '[tools]\npython = "3.13.1"\n', 'main.py': '' };
    assert.equal(scanProject(app(files)).plan.version, '3.13.1');
    const { 'mise.toml': _m, ...noMise } = files;
    assert.equal(scanProject(app(noMise)).plan.version, '3.12');
    const { '.python-version': _p, ...noFile } = noMise;
    assert.equal(scanProject(app(noFile)).plan.version, '3.11.9');
    const { 'runtime.txt': _r, ...pipfileOnly } = noFile;
    assert.equal(scanProject(app(pipfileOnly)).plan.version, '3.10');
    assert.equal(scanProject(app({ 'pyproject.toml': '[project]\nname = "x"\nrequires-python = ">=3.11"\n', 'main.py': '' })).plan.version, undefined);
  });

  it('a requirements.txt without a main file or framework has no start command', () => {
    const got = scanProject(app({ 'requirements.txt': 'numpy\n' }));
    assert.equal(got.runtime, 'python');
    assert.equal(got.plan.start, undefined);
    assert.equal(got.port, null);
  });

  it("a Flask main file that serves on 0.0.0.0 itself runs as `python main.py` on its own port (Railpack's plan); a bare app.run() gets flask run", () => {
    const flask = (main: string) => scanProject(app({ 'requirements.txt': 'flask\n', 'main.py': `from flask import Flask\napp = Flask(__name__)\n${main}` }));
    const serving = flask('if __name__ == "__main__":\n    app.run(host="0.0.0.0", port=8080)\n');
    assert.equal(serving.plan.start, '.venv/bin/python main.py');
    assert.equal(serving.port, 8080);
    const local = flask('if __name__ == "__main__":\n    app.run()\n');
    assert.equal(local.plan.start, '.venv/bin/flask --app main run --host 0.0.0.0 --port ${PORT:-8000}');
    assert.equal(local.port, 8000);
  });

  it('a Flask dependency with no Flask app in sight runs the main file, not the Flask runner', () => {
    const got = scanProject(app({ 'requirements.txt': 'flask\n', 'main.py': 'import worker\nworker.loop()\n' }));
    assert.equal(got.framework, 'flask');
    assert.equal(got.plan.start, '.venv/bin/python main.py');
  });

  it("reads the port a main file serves on: a literal, $PORT (8000), or Flask's default 5000", () => {
    const main = (run: string) => mainServes(`app = Flask(__name__)\n\nif __name__ == '__main__':\n    ${run}\n`);
    assert.deepEqual(main('app.run(host="0.0.0.0", port=8080)'), { port: 8080 });
    assert.deepEqual(main('app.run(host="0.0.0.0", port=int(os.environ.get("PORT", 5000)))'), { port: 8000 });
    assert.deepEqual(main("app.run(host='0.0.0.0')"), { port: 5000 });
    assert.equal(main('app.run(debug=True)'), null);
    assert.equal(mainServes('app.run(host="0.0.0.0")\n'), null, 'only under if __name__ == "__main__"');
  });
});
