import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CommandError, parseCommand } from '../../src/runtime/command.js';
import { pathWithBin, startSteps } from '../../src/runtime/build.js';
import { LogFile } from '../../src/runtime/logs.js';
import { tempDir } from '../support/harness.js';

test('commands become argument arrays: quotes, escapes, && steps, leading assignments, $VAR expansion', () => {
  assert.deepEqual(parseCommand('npm run build'), [{ argv: ['npm', 'run', 'build'], env: {} }]);
  assert.deepEqual(parseCommand(`node -e "console.log('a b')" 'x y' z\\ w`), [{ argv: ['node', '-e', "console.log('a b')", 'x y', 'z w'], env: {} }]);
  assert.deepEqual(parseCommand('npm ci && npm run build'), [
    { argv: ['npm', 'ci'], env: {} },
    { argv: ['npm', 'run', 'build'], env: {} },
  ]);
  assert.deepEqual(parseCommand('NODE_ENV=production FOO="a b" node server.js --port $PORT --host=${HOST}', { PORT: '3001', HOST: '127.0.0.1' }), [
    { argv: ['node', 'server.js', '--port', '3001', '--host=127.0.0.1'], env: { NODE_ENV: 'production', FOO: 'a b' } },
  ]);
  assert.deepEqual(parseCommand('PORT=4000 node s.js $PORT'), [{ argv: ['node', 's.js', '4000'], env: { PORT: '4000' } }]);
  assert.deepEqual(parseCommand("echo '$HOME' \"$UNSET\""), [{ argv: ['echo', '$HOME', ''], env: {} }]);
});

test('anything that needs a shell is refused with a message naming it', () => {
  for (const [cmd, re] of [
    ['npm run build | tee log', /"\|"/],
    ['a; b', /";"/],
    ['node x > out.txt', /">"/],
    ['echo `id`', /`/],
    ['echo $(id)', /\$\( \)/],
    ['node dist/*.js', /glob/],
    ['sleep 1 &', /"&"/],
    ['echo "unclosed', /unclosed double quote/],
    ['   ', /empty/],
    ['FOO=1', /no program/],
  ] as const) {
    assert.throws(() => parseCommand(cmd), (e: unknown) => e instanceof CommandError && re.test((e as Error).message), cmd);
  }
});

test('detection: install only with dependencies (lockfile picks the tool), build and start from package.json', async () => {
  const dir = tempDir('berth-detect-');
  try {
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ scripts: { start: 'node server.js' } }));
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ dependencies: { a: '1' }, scripts: { build: 'vite build', start: 'node dist/server.js' } }));
    // `npm start` runs the script's own command directly when it needs no shell
    assert.deepEqual(await startSteps(dir, 'npm start', { PORT: '1' }), [{ argv: ['node', 'dist/server.js'], env: {} }]);
    // a script that needs a shell is left to npm itself (the project's own script)
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ scripts: { start: 'node a.js | cat' } }));
    assert.deepEqual(await startSteps(dir, 'npm start', {}), [{ argv: ['npm', 'start'], env: {} }]);
    // so does pnpm's, yarn's and bun's
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ scripts: { start: 'node server.js --port $PORT' } }));
    for (const cmd of ['pnpm run start', 'yarn start', 'bun run start', 'pnpm start']) assert.deepEqual(await startSteps(dir, cmd, { PORT: '7' }), [{ argv: ['node', 'server.js', '--port', '7'], env: {} }], cmd);
    mkdirSync(path.join(dir, 'apps', 'web'), { recursive: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a log file is bounded: past its size it rotates once, and reads honour limit and since', () => {
  const dir = tempDir('berth-logs-');
  try {
    const f = new LogFile(path.join(dir, 'runtime.log'), 2000);
    for (let i = 0; i < 200; i++) f.append({ ts: new Date(1_700_000_000_000 + i).toISOString(), stream: 'stdout', line: `line ${i}` });
    f.close();
    assert.ok(statSync(path.join(dir, 'runtime.log')).size <= 2000);
    assert.ok(statSync(path.join(dir, 'runtime.log.1')).size <= 2000);
    const all = f.read({ limit: 10000 });
    assert.ok(all.length < 200 && all.length > 20, 'old lines were dropped');
    assert.equal(all.at(-1)!.line, 'line 199');
    assert.deepEqual(f.read({ limit: 2 }).map((l) => l.line), ['line 198', 'line 199']);
    const since = new Date(1_700_000_000_000 + 195).toISOString();
    assert.deepEqual(f.read({ since }).map((l) => l.line), ['line 196', 'line 197', 'line 198', 'line 199']);
    const got: string[] = [];
    const off = f.subscribe((l) => got.push(l.line));
    f.append({ ts: new Date().toISOString(), stream: 'stderr', line: 'live' });
    off();
    f.append({ ts: new Date().toISOString(), stream: 'stderr', line: 'after' });
    assert.deepEqual(got, ['live']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('${NAME:-default} expands to the default when NAME is unset or empty, and to NAME otherwise', () => {
  assert.deepEqual(parseCommand('flask run --port ${PORT:-5000}', {}), [{ argv: ['flask', 'run', '--port', '5000'], env: {} }]);
  assert.deepEqual(parseCommand('flask run --port ${PORT:-5000}', { PORT: '' }), [{ argv: ['flask', 'run', '--port', '5000'], env: {} }]);
  assert.deepEqual(parseCommand('flask run --port ${PORT:-5000}', { PORT: '3001' }), [{ argv: ['flask', 'run', '--port', '3001'], env: {} }]);
  assert.deepEqual(parseCommand('gunicorn app:app --bind "0.0.0.0:${PORT:-8000}"', { PORT: '9' }), [{ argv: ['gunicorn', 'app:app', '--bind', '0.0.0.0:9'], env: {} }]);
});

test('${NAME:=default} gives NAME its default for the rest of the command', () => {
  assert.deepEqual(parseCommand('serve --port ${PORT:=8080} && echo $PORT', {}), [
    { argv: ['serve', '--port', '8080'], env: {} },
    { argv: ['echo', '8080'], env: {} },
  ]);
  assert.deepEqual(parseCommand('serve --port ${PORT:=8080}', { PORT: '1' }), [{ argv: ['serve', '--port', '1'], env: {} }]);
});

test('other expansion forms and defaults that would need a shell are refused with what Berth supports', () => {
  assert.throws(() => parseCommand('echo ${PORT#x}'), /Berth expands \$\{NAME\}, \$\{NAME:-default\}/);
  assert.throws(() => parseCommand('echo ${PORT:-$(id)}'), /must be plain text/);
  assert.throws(() => parseCommand('echo ${PORT:?unset}'), /unsupported expansion/);
});

test("PATH has the app folder's node_modules/.bin, then each one above it up to the source root, then the toolchains", () => {
  const parts = pathWithBin('/app/apps/web', '/usr/bin', '/app').split(':');
  assert.deepEqual(parts, ['/app/apps/web/.venv/bin', '/app/apps/web/node_modules/.bin', '/app/apps/node_modules/.bin', '/app/node_modules/.bin', '/app/.berth-toolchain/bin', '/app/.berth-toolchain/node_modules/.bin', '/usr/bin']);
});
