import { existsSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Limits } from './cgroups.js';
import { CommandError, parseCommand, type CommandStep } from './command.js';
import type { Box, BoxProcess, Identity, RuntimeDriver } from './driver.js';
import type { LogStream } from './logs.js';
import { killGroup, spawnBoxProcess } from './box-process.js';
import { Redactor } from './redact.js';
import { chownTree } from './identity.js';
import { detectCommands, pathWithBin, startSteps } from './app-commands.js';
import { BuildError } from './build-error.js';
import { runBuildProcess, type ProcessBudget } from './build-process.js';
import { fetchSource, type BuildSource } from './build-source.js';
import { inside } from '../lib/copy-tree.js';

export { detectCommands, pathWithBin, startSteps } from './app-commands.js';
export { BuildError } from './build-error.js';
export type { BuildSource } from './build-source.js';

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

  const budget: ProcessBudget = { signal: input.signal, deadline, timeoutMs: input.timeoutMs, secrets: input.secrets, log: (stream, line) => input.log(stream, line) };
  const runProcess = (start: () => BoxProcess, label: string, killAll: () => void | Promise<void>): Promise<string> => runBuildProcess(budget, start, label, killAll);

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
  const commit = await fetchSource(input.source, { workDir: input.workDir, srcDir, signal: input.signal, note, runHost });
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
