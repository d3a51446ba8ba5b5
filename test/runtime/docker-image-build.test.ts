import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DockerEngine, demuxLogs } from '../../src/runtime/docker/engine.js';
import { DEFAULT_BASE_IMAGES, DockerImageBuilder, generatedDockerfile } from '../../src/runtime/docker/image-build.js';
import type { ImageBuildInput } from '../../src/runtime/driver.js';
import { tempDir } from '../support/harness.js';
import { waitFor } from '../support/wait.js';

const BASE_IMAGE = 'berth-base/node:20';
const DOCKER = '/usr/bin/docker';
const engine = DockerEngine.fromEnv();
const noEngine = await engine.ping().then(
  () => null,
  (e: Error) => `no Docker Engine answers (${e.message})`,
);
if (noEngine) console.log(`# test/runtime/docker-image-build: skipping the engine tests: ${noEngine}`);
const withEngine = { skip: noEngine ?? false };

const run = randomBytes(4).toString('hex');
const repo = `berth-test/image-build-${run}`;
const dirs: string[] = [];
const builder = new DockerImageBuilder({ env: { PATH: process.env.PATH, DOCKER_HOST: process.env.DOCKER_HOST }, engine, instanceKey: 'test' });

function dir(prefix: string): string {
  const d = tempDir(`berth-imgbuild-${prefix}-`);
  dirs.push(d);
  return d;
}

/** A folder with these files (paths relative to it; parents made). */
function folder(prefix: string, files: Record<string, string>): string {
  const d = dir(prefix);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(d, rel)), { recursive: true });
    writeFileSync(path.join(d, rel), text);
  }
  return d;
}

interface Built {
  lines: string[];
}

function input(over: Partial<ImageBuildInput> & { tag: string; contextDir: string }, out: Built = { lines: [] }): ImageBuildInput {
  return {
    buildArgs: {},
    secrets: {},
    labels: { 'berth.instance': 'test', 'berth.kind': 'build' },
    signal: new AbortController().signal,
    deadline: Date.now() + 60_000,
    log: (_stream, line) => out.lines.push(line),
    ...over,
  };
}

/** Runs `cmd` in a container of `image` (removed after); answers its exit code and output. */
async function runIn(image: string, cmd: string[], user?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const c = await engine.api.createContainer({ Image: image, Cmd: cmd, User: user, Tty: false, Labels: { 'berth.test': run } });
  try {
    await c.start();
    const exit = (await c.wait()) as { StatusCode: number };
    const logs = demuxLogs((await c.logs({ stdout: true, stderr: true, follow: false })) as unknown as Buffer);
    return { code: exit.StatusCode, ...logs };
  } finally {
    await c.remove({ force: true });
  }
}

/** Processes of this machine whose command line contains `needle`. */
function processesWith(needle: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(needle)) out.push(Number(pid));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

before(async () => {
  if (noEngine) return;
  const have = await engine.api
    .getImage(BASE_IMAGE)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (!have) {
    const r = spawnSync('bash', [path.resolve('scripts/docker-base-images.sh')], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  }
});

after(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  if (noEngine) return;
  const containers = await engine.api.listContainers({ all: true, filters: { label: [`berth.test=${run}`] } });
  for (const c of containers) await engine.api.getContainer(c.Id).remove({ force: true });
  const images = await engine.api.listImages({ filters: { reference: [`${repo}:*`] } });
  for (const img of images) {
    for (const t of img.RepoTags ?? []) await engine.api.getImage(t).remove({ force: true }).catch(() => {});
  }
});

test("a project's Dockerfile (outside the context) builds with the context's .dockerignore applied and the labels set", withEngine, async () => {
  const ctx = folder('ctx', { 'keep.txt': 'kept\n', 'ignored.txt': 'dropped\n', 'logs/debug.log': 'x\n', '.dockerignore': 'ignored.txt\nlogs\n' });
  const df = folder('df', { 'Dockerfile': `FROM ${BASE_IMAGE}\nCOPY . /app\nRUN ls -a /app\n` });
  const tag = `${repo}:dockerignore`;
  const out: Built = { lines: [] };
  await builder.build(input({ tag, contextDir: ctx, dockerfile: path.join(df, 'Dockerfile'), labels: { 'berth.project': 'p1', 'berth.kind': 'build' } }, out));

  const ls = await runIn(tag, ['ls', '-a', '/app']);
  assert.equal(ls.code, 0, ls.stderr);
  const files = ls.stdout.split('\n').filter(Boolean);
  assert.ok(files.includes('keep.txt'), ls.stdout);
  assert.ok(!files.includes('ignored.txt'), 'an ignored file is not in the image');
  assert.ok(!files.includes('logs'), 'an ignored folder is not in the image');
  const info = await engine.api.getImage(tag).inspect();
  assert.equal(info.Config.Labels?.['berth.project'], 'p1');
  assert.equal(info.Config.Labels?.['berth.kind'], 'build');
  assert.equal(info.Config.Labels?.['berth.instance'], 'test', "the builder's instance key labels every image");
  assert.ok(out.lines.some((l) => /\[3\/3\] RUN ls -a \/app/.test(l)), 'the log carries BuildKit\'s progress');
});

test("a Dockerfile's context written owner-only (Berth's umask 077) is copied readable by the image's non-root user, executables kept", withEngine, async () => {
  const ctx = folder('umask', { 'server.txt': 'served\n', 'sub/deep.txt': 'deep\n', 'run.sh': '#!/bin/sh\necho ran\n', 'Dockerfile': `FROM ${BASE_IMAGE}\nCOPY . /srv\n` });
  for (const [rel, mode] of [
    ['server.txt', 0o600],
    ['sub/deep.txt', 0o600],
    ['run.sh', 0o700],
    ['Dockerfile', 0o600],
    ['sub', 0o700],
    ['.', 0o700],
  ] as const) {
    chmodSync(path.join(ctx, rel), mode);
  }
  const tag = `${repo}:umask`;
  await builder.build(input({ tag, contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile') }));
  // The base image runs as `app` (uid 1000); COPY without --chown makes the files root's.
  const cat = await runIn(tag, ['cat', '/srv/server.txt', '/srv/sub/deep.txt']);
  assert.equal(cat.code, 0, cat.stderr);
  assert.equal(cat.stdout, 'served\ndeep\n');
  const exec = await runIn(tag, ['/srv/run.sh']);
  assert.equal(exec.code, 0, exec.stderr);
  assert.equal(exec.stdout, 'ran\n');
});

test('a build secret reaches a RUN --mount=type=secret step, yet never the image, its history or the build log', withEngine, async () => {
  const secret = `tok-${randomBytes(12).toString('hex')}`;
  const sha = createHash('sha256').update(secret).digest('hex');
  // Bigger than an environment variable may be: it reaches the CLI as a file.
  const big = randomBytes(60 * 1024).toString('hex');
  const ctx = folder('secret', {
    'Dockerfile': [
      `FROM ${BASE_IMAGE}`,
      'USER 1000:1000',
      `RUN --mount=type=secret,id=TOKEN,uid=1000 echo "${run} token=$(cat /run/secrets/TOKEN)" && mkdir -p /home/app/out && busybox sha256sum /run/secrets/TOKEN > /home/app/out/token.sha`,
      'RUN --mount=type=secret,id=BIG,uid=1000 busybox sha256sum /run/secrets/BIG > /home/app/out/big.sha',
      '',
    ].join('\n'),
  });
  const tag = `${repo}:secret`;
  const out: Built = { lines: [] };
  await builder.build(input({ tag, contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile'), secrets: { TOKEN: secret, BIG: big } }, out));

  const log = out.lines.join('\n');
  assert.match(log, /token=\*{8}/, 'the step read the secret (and its echo was redacted)');
  assert.ok(!log.includes(secret) && !log.includes(big.slice(0, 64)), 'the build log never holds the secrets');
  const stored = await runIn(tag, ['cat', '/home/app/out/token.sha']);
  assert.equal(stored.stdout.split(/\s/)[0], sha, 'the step saw the exact value');
  const storedBig = await runIn(tag, ['cat', '/home/app/out/big.sha']);
  assert.equal(storedBig.stdout.split(/\s/)[0], createHash('sha256').update(big).digest('hex'), 'a big secret arrives whole');
  const secretFile = await runIn(tag, ['sh', '-c', 'ls -A /run/secrets 2>/dev/null; true']);
  assert.equal(secretFile.stdout, '', 'no secret file stays in the image');

  const history = spawnSync(DOCKER, ['history', '--no-trunc', tag], { encoding: 'utf8' });
  assert.equal(history.status, 0, history.stderr);
  assert.ok(!history.stdout.includes(secret), 'docker history does not hold the secret');
  assert.match(history.stdout, /cat \/run\/secrets\/TOKEN/, 'the step is in the history');
  const inspect = spawnSync(DOCKER, ['image', 'inspect', tag], { encoding: 'utf8' });
  assert.equal(inspect.status, 0, inspect.stderr);
  assert.ok(!inspect.stdout.includes(secret), 'docker image inspect does not hold the secret');
  const saved = spawnSync(DOCKER, ['save', tag], { maxBuffer: 512 * 1024 * 1024 });
  assert.equal(saved.status, 0);
  assert.ok(!saved.stdout.includes(Buffer.from(secret)) && !saved.stdout.includes(Buffer.from(big.slice(0, 64))), 'no layer holds the secrets');
});

test('plain variables are build args a Dockerfile reads with ARG', withEngine, async () => {
  const ctx = folder('arg', { 'Dockerfile': `FROM ${BASE_IMAGE}\nARG GREETING\nARG UNUSED_DEFAULT=fallback\nRUN echo "greeting=$GREETING default=$UNUSED_DEFAULT" > /tmp/greeting && cat /tmp/greeting\n` });
  const tag = `${repo}:arg`;
  const out: Built = { lines: [] };
  await builder.build(input({ tag, contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile'), buildArgs: { GREETING: 'hello, world = 1', NOT_DECLARED: 'x' } }, out));
  const r = await runIn(tag, ['cat', '/tmp/greeting']);
  assert.equal(r.stdout.trim(), 'greeting=hello, world = 1 default=fallback');
});

test('a failing RUN step rejects with an error naming the step and why', withEngine, async () => {
  const ctx = folder('fail', { 'Dockerfile': `FROM ${BASE_IMAGE}\nRUN echo step one\nRUN echo about to fail ${run} && exit 3\nRUN echo never\n` });
  const out: Built = { lines: [] };
  await assert.rejects(
    builder.build(input({ tag: `${repo}:fail`, contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile'), secrets: { API_KEY: 'a-secret-never-shown' } }, out)),
    (e: Error) => {
      assert.match(e.message, new RegExp(`^the Dockerfile build failed at \\[3/4\\] RUN echo about to fail ${run} && exit 3: .*exit code: 3$`));
      return true;
    },
  );
  assert.ok(out.lines.some((l) => l.includes(`about to fail ${run}`)));
  await assert.rejects(engine.api.getImage(`${repo}:fail`).inspect(), /no such image/i);
});

test('a failing step that prints a secret names the step with the secret redacted', withEngine, async () => {
  const ctx = folder('failsecret', { 'Dockerfile': `FROM ${BASE_IMAGE}\nRUN --mount=type=secret,id=PW,uid=1000 sh -c 'cat /run/secrets/PW; exit 4'\n` });
  const secret = `pw-${randomBytes(8).toString('hex')}`;
  const out: Built = { lines: [] };
  await assert.rejects(builder.build(input({ tag: `${repo}:failsecret`, contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile'), secrets: { PW: secret } }, out)), (e: Error) => {
    assert.match(e.message, /^the Dockerfile build failed at \[2\/2\] RUN --mount=type=secret,id=PW,uid=1000 sh -c 'cat \/run\/secrets\/PW; exit 4': .*exit code: 4$/);
    assert.ok(!e.message.includes(secret));
    return true;
  });
  assert.ok(out.lines.some((l) => l.includes('********')), 'the value printed by the step is masked');
  assert.ok(!out.lines.join('\n').includes(secret));
});

test('cancelling through the signal kills the CLI at once and BuildKit stops the step', withEngine, async () => {
  const marker = `${4000 + Math.floor(Math.random() * 999)}`;
  const ctx = folder('cancel', { 'Dockerfile': `FROM ${BASE_IMAGE}\nRUN echo started-${run} && sleep ${marker}\n` });
  const tag = `${repo}:cancel`;
  const ac = new AbortController();
  const out: Built = { lines: [] };
  const building = builder.build(input({ tag, contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile'), signal: ac.signal }, out));
  const rejected = assert.rejects(building, { message: 'the build was cancelled' });
  await waitFor(() => out.lines.some((l) => l.includes(`started-${run}`)), 'the slow step to start', 30_000);
  assert.ok(processesWith(tag).length > 0, 'the CLI runs');
  const t0 = Date.now();
  ac.abort();
  await rejected;
  assert.ok(Date.now() - t0 < 3000, `rejected after ${Date.now() - t0} ms`);
  assert.deepEqual(processesWith(tag), [], 'the CLI is gone');
  await waitFor(() => processesWith(`sleep\0${marker}`).length === 0, 'BuildKit to stop the step', 20_000, 200);
  await assert.rejects(engine.api.getImage(tag).inspect(), /no such image/i);
});

test('a build past its deadline is killed and rejects as timed out', withEngine, async () => {
  const ctx = folder('deadline', { 'Dockerfile': `FROM ${BASE_IMAGE}\nRUN echo slow-${run} && sleep 60\n` });
  const t0 = Date.now();
  await assert.rejects(builder.build(input({ tag: `${repo}:deadline`, contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile'), deadline: Date.now() + 2500 })), {
    message: 'the image build timed out',
  });
  assert.ok(Date.now() - t0 < 6000, `rejected after ${Date.now() - t0} ms`);
  assert.deepEqual(processesWith(`${repo}:deadline`), [], 'the CLI is gone');
});

test("a RUN step writing past build.diskMb stops the build with a line naming the limit; a build within it is untouched", withEngine, async () => {
  assert.ok(await builder.storageRoot(), "the engine's storage is on this machine");
  // Random bytes: nothing on the way (page cache, filesystem) makes them smaller than written.
  const fill = folder('disk-fill', { 'Dockerfile': `FROM ${BASE_IMAGE}\nRUN echo fill-${run} && head -c 400000000 /dev/urandom > /tmp/fill && sleep 30\n` });
  const out: Built = { lines: [] };
  await assert.rejects(builder.build(input({ tag: `${repo}:disk-fill`, contextDir: fill, dockerfile: path.join(fill, 'Dockerfile'), diskMb: 64 }, out)), /the build's image layers are full: Docker's storage grew by \d+ MB while it ran, past the 64 MB build\.diskMb allows/);
  assert.ok(out.lines.some((l) => l.startsWith("[berth] the build's image layers are full")), out.lines.join('\n'));
  await waitFor(() => (processesWith(`${repo}:disk-fill`).length === 0 ? true : null), 'the CLI to be gone', 10_000);

  const small = folder('disk-small', { 'Dockerfile': `FROM ${BASE_IMAGE}\nRUN head -c 1000000 /dev/urandom > /tmp/small\n` });
  await builder.build(input({ tag: `${repo}:disk-small`, contextDir: small, dockerfile: path.join(small, 'Dockerfile'), diskMb: 256 }));
});

test("a generated Dockerfile copies the whole built folder, whatever its own .dockerignore says (only .git is left out)", withEngine, async () => {
  const ctx = folder('gen', {
    'package.json': '{"name":"gen","version":"1.0.0"}\n',
    'node_modules/left-pad/index.js': 'module.exports = 1;\n',
    'dist/index.html': '<h1>built</h1>\n',
    '.dockerignore': 'node_modules\ndist\n',
    '.git/HEAD': 'ref: refs/heads/main\n',
  });
  chmodSync(path.join(ctx, 'package.json'), 0o600);
  const tag = `${repo}:generated`;
  const text = generatedDockerfile({ base: BASE_IMAGE, uid: 1234, gid: 1235 });
  await builder.build(input({ tag, contextDir: ctx, dockerfileText: text }));

  const r = await runIn(tag, ['sh', '-c', 'id -u; id -g; pwd; ls -a /app; ls -ln /app/package.json; cat /app/package.json; cat /app/node_modules/left-pad/index.js']);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.split('\n');
  assert.deepEqual(lines.slice(0, 3), ['1234', '1235', '/app']);
  assert.ok(lines.includes('node_modules'), 'node_modules is in the image');
  assert.ok(lines.includes('dist'));
  assert.ok(!lines.includes('.git'), '.git is not');
  assert.match(r.stdout, / 1234 +1235 .*package\.json/, 'files belong to the identity');
  assert.match(r.stdout, /module\.exports = 1;/);
  const info = await engine.api.getImage(tag).inspect();
  assert.equal(info.Config.User, '1234:1235');
  assert.equal(info.Config.WorkingDir, '/app');
});

test('remove() removes images, and passes over missing ones and ones a container uses', withEngine, async () => {
  const ctx = folder('rm', { 'Dockerfile': `FROM ${BASE_IMAGE}\nRUN echo ${run} > /tmp/rm\n` });
  const a = `${repo}:rm-a`;
  const b = `${repo}:rm-b`;
  await builder.build(input({ tag: a, contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile') }));
  await builder.build(input({ tag: b, contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile'), labels: { 'berth.deployment': 'b' } }));
  const used = await engine.api.createContainer({ Image: b, Cmd: ['true'], Labels: { 'berth.test': run } });
  try {
    await builder.remove([a, `${repo}:never-built`, b]);
    await assert.rejects(engine.api.getImage(a).inspect(), /no such image/i);
    await engine.api.getImage(b).inspect();
  } finally {
    await used.remove({ force: true });
  }
  await builder.remove([b]);
  await assert.rejects(engine.api.getImage(b).inspect(), /no such image/i);
});

test('the CLI gets an argument array and an environment of its own: no server variables, secrets only by name', async () => {
  const d = dir('fakecli');
  const fake = path.join(d, 'docker');
  writeFileSync(fake, '#!/bin/sh\nfor a in "$@"; do echo "arg:$a"; done\nenv | sort | sed "s/^/env:/"\nexit 0\n');
  chmodSync(fake, 0o755);
  process.env.BERTH_TEST_SERVER_ONLY = 'server-value';
  try {
    const b = new DockerImageBuilder({ env: { ...process.env, BERTH_DOCKER_CLI: fake, DOCKER_HOST: 'unix:///run/x.sock' }, engine, instanceKey: 'k' });
    const out: Built = { lines: [] };
    const ctx = folder('fakectx', { 'a.txt': 'a' });
    await b.build(input({ tag: 'berth/p:d1', contextDir: ctx, dockerfileText: 'FROM x\n', buildArgs: { PLAIN: 'v 1' }, secrets: { TOKEN: 'hidden-token-value', 'ODD,ID': 'other-secret', BIG: 'b'.repeat(70 * 1024) }, labels: { 'berth.kind': 'build' } }, out));
    const args = out.lines.filter((l) => l.startsWith('arg:')).map((l) => l.slice(4));
    const env = out.lines.filter((l) => l.startsWith('env:')).map((l) => l.slice(4));
    const config = env.find((l) => l.startsWith('DOCKER_CONFIG='))!.slice('DOCKER_CONFIG='.length);
    assert.deepEqual(args.slice(0, 4), ['build', '--progress=plain', '--pull=false', '--tag=berth/p:d1']);
    const dockerfile = args[4]!.replace(/^--file=/, '');
    assert.match(dockerfile, /^\/.*\/Dockerfile$/);
    assert.ok(!dockerfile.startsWith(ctx), 'a generated Dockerfile lies outside the context');
    assert.deepEqual(args.slice(5), [
      '--label=berth.instance=k',
      '--label=berth.kind=build',
      '--build-arg=PLAIN=v 1',
      '--secret=id=TOKEN,env=BERTH_BUILD_SECRET_0',
      '--secret="id=ODD,ID",env=BERTH_BUILD_SECRET_1',
      `--secret=id=BIG,src=${path.join(path.dirname(config), 'secrets', '2')}`,
      '--',
      ctx,
    ]);
    const names = env.map((l) => l.split('=')[0]).filter((n) => n !== 'PWD' && n !== 'SHLVL' && n !== '_');
    assert.deepEqual(names.sort(), ['BERTH_BUILD_SECRET_0', 'BERTH_BUILD_SECRET_1', 'DOCKER_BUILDKIT', 'DOCKER_CONFIG', 'DOCKER_HOST', 'PATH']);
    assert.ok(env.includes('BERTH_BUILD_SECRET_0=********'), 'secret values reach the CLI (and are masked in the log)');
    assert.ok(env.includes('DOCKER_HOST=unix:///run/x.sock'));
    assert.ok(!out.lines.join('\n').includes('hidden-token-value'));
    assert.ok(!out.lines.join('\n').includes('server-value'));
    assert.ok(!out.lines.join('\n').includes('b'.repeat(64)));
    // The DOCKER_CONFIG folder, the secret files and the generated Dockerfile are removed afterwards.
    assert.throws(() => readdirSync(path.dirname(config)), /ENOENT/);
    assert.throws(() => readFileSync(dockerfile), /ENOENT/);
  } finally {
    delete process.env.BERTH_TEST_SERVER_ONLY;
  }
});

test('a missing docker CLI fails the build with an error naming the fix', async () => {
  const b = new DockerImageBuilder({ env: { PATH: '/nonexistent', BERTH_DOCKER_CLI: '/nonexistent/docker' }, engine, instanceKey: 'k' });
  const ctx = folder('nocli', { 'Dockerfile': 'FROM x\n' });
  await assert.rejects(b.build(input({ tag: 'berth/p:d', contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile') })), {
    message: 'no docker CLI (/nonexistent/docker): install docker.io (its docker CLI builds images)',
  });
});

test('a cancelled or expired build does not start the CLI', async () => {
  const b = new DockerImageBuilder({ env: { PATH: '/nonexistent', BERTH_DOCKER_CLI: '/nonexistent/docker' }, engine, instanceKey: 'k' });
  const ctx = folder('early', { 'Dockerfile': 'FROM x\n' });
  await assert.rejects(b.build(input({ tag: 'berth/p:d', contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile'), signal: AbortSignal.abort() })), { message: 'the build was cancelled' });
  await assert.rejects(b.build(input({ tag: 'berth/p:d', contextDir: ctx, dockerfile: path.join(ctx, 'Dockerfile'), deadline: Date.now() - 1 })), { message: 'the image build timed out' });
});

test('baseImage() takes BERTH_IMAGE_<RUNTIME>, else the default of a known runtime, else null', () => {
  const b = new DockerImageBuilder({ env: { BERTH_IMAGE_NODE: 'berth-base/node:20', BERTH_IMAGE_MY_RUNTIME: 'mine:1', BERTH_IMAGE_PYTHON: '  ' }, engine, instanceKey: 'k' });
  assert.equal(b.baseImage('node'), 'berth-base/node:20');
  assert.equal(b.baseImage('my-runtime'), 'mine:1');
  assert.equal(b.baseImage('python'), 'python:3.12-slim-bookworm', 'a blank variable is not set');
  assert.equal(b.baseImage('static'), 'node:20-bookworm-slim');
  assert.equal(b.baseImage('cobol'), null);
  assert.equal(b.baseImage('toString'), null);
  const d = new DockerImageBuilder({ env: {}, engine, instanceKey: 'k' });
  assert.deepEqual(
    Object.fromEntries(['node', 'bun', 'python', 'go', 'ruby', 'php', 'rust', 'static'].map((r) => [r, d.baseImage(r)])),
    { ...DEFAULT_BASE_IMAGES },
  );
  assert.equal(d.baseImage('node'), 'node:20-bookworm-slim');
  assert.equal(d.baseImage('bun'), 'oven/bun:1');
  assert.equal(d.baseImage('go'), 'golang:1.22-bookworm');
});

test('generatedDockerfile() copies the release to /app as the identity and runs as it', () => {
  assert.equal(generatedDockerfile({ base: 'node:20-bookworm-slim', uid: 1000, gid: 1000 }), 'FROM node:20-bookworm-slim\nCOPY --chown=1000:1000 . /app\nWORKDIR /app\nUSER 1000:1000\n');
  assert.match(generatedDockerfile({ base: 'b:1', uid: 5, gid: 6, workdir: '/app/apps/web' }), /\nWORKDIR \/app\/apps\/web\nUSER 5:6\n$/);
  assert.throws(() => generatedDockerfile({ base: 'b:1\nRUN evil', uid: 1, gid: 1 }), /not an image reference/);
  assert.throws(() => generatedDockerfile({ base: 'b:1', uid: -1, gid: 1 }), /uid/);
  assert.throws(() => generatedDockerfile({ base: 'b:1', uid: 1, gid: 1, workdir: 'rel' }), /absolute/);
});
