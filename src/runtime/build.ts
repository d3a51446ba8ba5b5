import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Limits } from './cgroups.js';
import { CommandError, parseCommand, type CommandStep } from './command.js';
import type { Box, BoxProcess, Identity, RuntimeDriver } from './driver.js';
import type { LogStream } from './logs.js';
import { killGroup, spawnBoxProcess } from './box-process.js';
import { LineSplitter, Redactor } from './redact.js';
import { copyTreeWithinRoots } from '../lib/copy-tree.js';
import { chownTree } from './identity.js';

export type BuildSource =
  | { type: 'local'; path: string; roots: string[] }
  | { type: 'upload'; dir: string }
  | { type: 'git'; url: string; ref: string | null; username?: string | null; token?: string | null };

export interface BuildCommands {
  installCommand?: string | null;
  buildCommand?: string | null;
  startCommand?: string | null;
  rootDirectory?: string | null;
}

export interface BuildInput {
  deploymentId: string;
  projectId: string;
  /** Fresh per deployment; removed first if it exists. */
  workDir: string;
  source: BuildSource;
  commands: BuildCommands;
  /** The environment's variables (plain and secret) the build sees. */
  env: Record<string, string>;
  /** Secret values (env secrets, clone credential) redacted from every line. */
  secrets: string[];
  baseEnv: Record<string, string>;
  timeoutMs: number;
  limits: Limits;
  driver: RuntimeDriver;
  /** The project's own uid/gid (sandbox driver as root); the build's files are made theirs. */
  identity: Identity | null;
  signal: AbortSignal;
  log(stream: LogStream, line: string): void;
}

export interface BuildResult {
  commit: string | null;
  /** The release's source folder (shown at `/app`). */
  appRoot: string;
  /** The folder the app runs in (the source folder, or its root directory). */
  appDir: string;
  /** The start command the release runs with. */
  startCommand: string;
}

export class BuildError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BuildError';
  }
}

const SKIP_COPY = new Set(['.git', 'node_modules']);

/** What a folder needs, when the project does not say: npm install/build/start from package.json. */
export function detectCommands(dir: string): { installCommand: string | null; buildCommand: string | null; startCommand: string | null } {
  const pkgFile = path.join(dir, 'package.json');
  if (!existsSync(pkgFile)) {
    if (existsSync(path.join(dir, 'server.js'))) return { installCommand: null, buildCommand: null, startCommand: 'node server.js' };
    if (existsSync(path.join(dir, 'index.js'))) return { installCommand: null, buildCommand: null, startCommand: 'node index.js' };
    return { installCommand: null, buildCommand: null, startCommand: null };
  }
  let pkg: { dependencies?: object; devDependencies?: object; scripts?: Record<string, string>; main?: string };
  try {
    pkg = JSON.parse(readFileSync(pkgFile, 'utf8'));
  } catch {
    throw new BuildError('package.json is not valid JSON');
  }
  const hasDeps = Object.keys(pkg.dependencies ?? {}).length + Object.keys(pkg.devDependencies ?? {}).length > 0;
  let installCommand: string | null = null;
  if (hasDeps) {
    if (existsSync(path.join(dir, 'pnpm-lock.yaml'))) installCommand = 'pnpm install --frozen-lockfile';
    else if (existsSync(path.join(dir, 'yarn.lock'))) installCommand = 'yarn install --frozen-lockfile';
    else if (existsSync(path.join(dir, 'package-lock.json'))) installCommand = 'npm ci';
    else installCommand = 'npm install';
  }
  const buildCommand = pkg.scripts?.build ? 'npm run build' : null;
  let startCommand: string | null = null;
  if (pkg.scripts?.start) startCommand = 'npm start';
  else if (pkg.main && existsSync(path.join(dir, pkg.main))) startCommand = `node ${pkg.main}`;
  else if (existsSync(path.join(dir, 'server.js'))) startCommand = 'node server.js';
  else if (existsSync(path.join(dir, 'index.js'))) startCommand = 'node index.js';
  return { installCommand, buildCommand, startCommand };
}

/**
 * The argument arrays a start command runs as. `npm start` whose script needs no shell is run
 * directly (one process less, faster start and wake); otherwise the command itself is parsed.
 */
export function startSteps(appDir: string, command: string, env: Record<string, string>): CommandStep[] {
  const trimmed = command.trim();
  if (trimmed === 'npm start' || trimmed === 'npm run start') {
    try {
      const pkg = JSON.parse(readFileSync(path.join(appDir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
      const script = pkg.scripts?.start;
      if (script && !/^npm\b/.test(script.trim())) return parseCommand(script, env);
    } catch {
      /* fall through to npm itself */
    }
  }
  return parseCommand(trimmed, env);
}

/** PATH with the app's own `node_modules/.bin` first (package scripts expect it). */
export function pathWithBin(appDir: string, basePath: string | undefined): string {
  return [path.join(appDir, 'node_modules', '.bin'), basePath ?? '/usr/local/bin:/usr/bin:/bin'].join(path.delimiter);
}

function inside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * One build: a fresh working directory, the source (upload copy, local folder copy or git fetch at a
 * ref with the credential passed through GIT_ASKPASS, never in a URL), then the install and build
 * commands, each as a process group under the build limits, every output line redacted, the whole
 * bounded by `timeoutMs` and cancelled by `signal` (the group is killed).
 */
export async function runBuild(input: BuildInput): Promise<BuildResult> {
  const redact = new Redactor(input.secrets);
  const note = (line: string) => input.log('stdout', `[berth] ${redact.redactString(line)}`);
  const deadline = Date.now() + input.timeoutMs;
  rmSync(input.workDir, { recursive: true, force: true });
  const srcDir = path.join(input.workDir, 'src');
  const homeDir = path.join(input.workDir, 'home');
  mkdirSync(srcDir, { recursive: true });
  mkdirSync(homeDir, { recursive: true });

  const baseEnv: Record<string, string> = {
    ...input.baseEnv,
    CI: '1',
    BERTH_PROJECT_ID: input.projectId,
    BERTH_DEPLOYMENT_ID: input.deploymentId,
  };

  /** Runs one process to its end: output redacted into the build log, cancel and the deadline kill it. */
  const runProcess = async (start: () => BoxProcess, label: string, killAll: () => void | Promise<void>): Promise<string> => {
    if (input.signal.aborted) throw new BuildError('the build was cancelled');
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new BuildError(`the build timed out after ${Math.round(input.timeoutMs / 1000)} s`);
    let child: BoxProcess;
    try {
      child = start();
    } catch (e) {
      throw new BuildError(`could not run ${label}: ${(e as Error).message}`);
    }
    let captured = '';
    const attach = (stream: NodeJS.ReadableStream | null, name: LogStream) => {
      if (!stream) return;
      const r = new Redactor(input.secrets);
      const lines = new LineSplitter((line) => {
        if (captured.length < 4096) captured += line + '\n';
        input.log(name, line);
      });
      stream.on('data', (c: Buffer) => lines.push(r.push(c)));
      stream.on('end', () => {
        lines.push(r.end());
        lines.end();
      });
      stream.on('error', () => {});
    };
    attach(child.stdout, 'stdout');
    attach(child.stderr, 'stderr');
    let why: string | null = null;
    const onAbort = () => {
      why = 'the build was cancelled';
      killAll();
    };
    input.signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      why = `the build timed out after ${Math.round(input.timeoutMs / 1000)} s`;
      killAll();
    }, remaining);
    try {
      const { code, signal, error } = await child.exited;
      if (why) throw new BuildError(why);
      if (error) throw new BuildError(`could not run ${label}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? `program "${label}" not found` : error.message}`);
      if (code === 127) throw new BuildError(`${label} failed: a program it runs was not found (exit code 127)`);
      if (code !== 0) throw new BuildError(`${label} failed (${signal ? `killed by ${signal}` : `exit code ${code}`})`);
      return captured;
    } finally {
      clearTimeout(timer);
      input.signal.removeEventListener('abort', onAbort);
      // Anything the step left running (children, detached ones) goes with it.
      await killAll();
    }
  };

  /** Berth's own tools (git) on the host, as the server, with nothing of the server's environment. */
  const runHost = (argv: string[], cwd: string, extraEnv: Record<string, string>, label: string): Promise<string> => {
    let pid: number | undefined;
    return runProcess(
      () => {
        const p = spawnBoxProcess(argv, cwd, { ...baseEnv, HOME: homeDir, ...extraEnv });
        pid = p.pid;
        return p;
      },
      label,
      () => {
        killGroup(pid, 'SIGKILL');
      },
    );
  };

  /** A command of the project's, in the build's box; nothing it started outlives the step. */
  const runStep = (box: Box, argv: string[], cwd: string, extraEnv: Record<string, string>, label: string): Promise<string> =>
    runProcess(() => box.exec(argv, { cwd, env: { ...baseEnv, HOME: box.paths.home ?? box.paths.tmp, ...extraEnv } }), label, () => box.killAll());

  // ---- source
  let commit: string | null = null;
  const src = input.source;
  if (src.type === 'upload') {
    if (!existsSync(src.dir)) throw new BuildError('the uploaded source is gone; upload the folder again');
    note('copying the uploaded source');
    cpSync(src.dir, srcDir, { recursive: true, verbatimSymlinks: true });
  } else if (src.type === 'local') {
    let real: string;
    try {
      real = realpathSync(src.path);
    } catch {
      throw new BuildError(`the project's local folder ${src.path} does not exist`);
    }
    const roots = src.roots.map((r) => {
      try {
        return realpathSync(r);
      } catch {
        return path.resolve(r);
      }
    });
    if (!roots.some((r) => inside(real, r))) throw new BuildError(`the project's local folder ${src.path} is outside BERTH_LOCAL_ROOTS`);
    note(`copying ${src.path}`);
    copyTreeWithinRoots(real, srcDir, { roots, skipNames: SKIP_COPY, onSkip: (rel, why) => note(`not copied: ${rel}: ${why}`) });
  } else {
    const gitEnv: Record<string, string> = { GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' };
    if (src.token) {
      // The credential reaches git through an askpass helper that reads it from the environment of
      // this one process; it is never in a URL, an argument or a file.
      const askpass = path.join(input.workDir, 'askpass.sh');
      writeFileSync(askpass, '#!/bin/sh\ncase "$1" in\n  Username*) printf "%s\\n" "$BERTH_GIT_USERNAME" ;;\n  *) printf "%s\\n" "$BERTH_GIT_PASSWORD" ;;\nesac\n', { mode: 0o700 });
      chmodSync(askpass, 0o700);
      gitEnv.GIT_ASKPASS = askpass;
      gitEnv.BERTH_GIT_USERNAME = src.username || 'x-access-token';
      gitEnv.BERTH_GIT_PASSWORD = src.token;
    }
    let shown = src.url;
    try {
      const u = new URL(src.url);
      u.username = '';
      u.password = '';
      shown = u.toString();
    } catch {
      /* a path */
    }
    note(`fetching ${shown}${src.ref ? ` at ${src.ref}` : ''}`);
    await runHost(['git', 'init', '-q', srcDir], input.workDir, gitEnv, 'git init');
    await runHost(['git', '-C', srcDir, 'remote', 'add', 'origin', src.url], input.workDir, gitEnv, 'git remote');
    const ref = src.ref || 'HEAD';
    // A ref is passed to git as an argument: one that looks like an option, or names a refspec, is refused.
    if (ref.startsWith('-') || /[\s:~^?*[\\]|\.\.|@\{/.test(ref) || ref.length > 255) throw new BuildError(`the ref "${ref.slice(0, 80)}" is not a valid branch, tag or commit`);
    try {
      await runHost(['git', '-C', srcDir, 'fetch', '-q', '--depth', '1', 'origin', ref], input.workDir, gitEnv, 'git fetch');
    } catch (e) {
      if (input.signal.aborted) throw e;
      note('shallow fetch failed; fetching the full history');
      await runHost(['git', '-C', srcDir, 'fetch', '-q', 'origin'], input.workDir, gitEnv, 'git fetch');
      await runHost(['git', '-C', srcDir, 'checkout', '-q', ref], input.workDir, gitEnv, 'git checkout');
    }
    try {
      await runHost(['git', '-C', srcDir, 'checkout', '-q', 'FETCH_HEAD'], input.workDir, gitEnv, 'git checkout');
    } catch {
      /* already checked out by the fallback */
    }
    commit = (await runHost(['git', '-C', srcDir, 'rev-parse', 'HEAD'], input.workDir, gitEnv, 'git rev-parse')).trim() || null;
    rmSync(path.join(input.workDir, 'askpass.sh'), { force: true });
  }
  // The source becomes the project's: its build steps write into it as the project's own uid.
  if (input.identity) {
    await chownTree(srcDir, input.identity);
    await chownTree(homeDir, input.identity);
  }

  // ---- commands
  let appDir = srcDir;
  if (input.commands.rootDirectory) {
    const rd = path.resolve(srcDir, input.commands.rootDirectory.replace(/^\/+/, ''));
    if (!inside(rd, srcDir) || !existsSync(rd)) throw new BuildError(`the root directory ${input.commands.rootDirectory} does not exist in the source`);
    appDir = rd;
  }
  const detected = detectCommands(appDir);
  const install = input.commands.installCommand ?? detected.installCommand;
  const build = input.commands.buildCommand ?? detected.buildCommand;
  const start = input.commands.startCommand ?? detected.startCommand;
  if (!start) throw new BuildError('no start command: set startCommand on the project, or add a "start" script to package.json');
  const commands = [
    ['install', install],
    ['build', build],
  ] as const;
  if (!install && !build) for (const [label] of commands) note(`no ${label} command; skipping`);
  else {
    // One box for the whole build: install and build run in it one after the other.
    let box: Box;
    try {
      box = await input.driver.open({ kind: 'build', projectId: input.projectId, name: `build-${input.deploymentId}`, identity: input.identity, limits: input.limits, appDir: srcDir, homeDir });
    } catch (e) {
      throw new BuildError(`the build cannot run: ${(e as Error).message}`);
    }
    try {
      const stepEnv = { ...input.env, PATH: pathWithBin(box.inside(appDir), input.baseEnv.PATH) };
      for (const [label, cmd] of commands) {
        if (!cmd) {
          note(`no ${label} command; skipping`);
          continue;
        }
        let steps: CommandStep[];
        try {
          steps = parseCommand(cmd, { ...baseEnv, ...stepEnv });
        } catch (e) {
          throw new BuildError(`the ${label} command cannot run: ${(e as CommandError).message}`);
        }
        note(`${label}: ${cmd}`);
        for (const st of steps) await runStep(box, st.argv, appDir, { ...stepEnv, ...st.env }, `the ${label} command`);
      }
    } finally {
      await box.dispose().catch(() => {});
    }
  }
  try {
    startSteps(appDir, start, {});
  } catch (e) {
    throw new BuildError(`the start command cannot run: ${(e as CommandError).message}`);
  }
  note(`build finished; start command: ${start}`);
  return { commit, appRoot: srcDir, appDir, startCommand: start };
}
