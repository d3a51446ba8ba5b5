/**
 * Running the real `berth` binary against a test server as a signed-in user: each user gets its own
 * config dir and home (a temp XDG_CONFIG_HOME/HOME holding `berth/config.json { server, token }`, as
 * `berth login` writes it), and the child sees none of this process's BERTH_* or DATABASE_URL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cliArgv, runCli, type RunResult } from '../support/cli.js';
import { tempDir } from '../support/harness.js';

export interface CliUser {
  /** The environment of this user's `berth` runs. */
  env: Record<string, string>;
  home: string;
  configFile: string;
  /** The saved client config (what `switch` rewrites). */
  config(): { server?: string; token?: string; orgTokens?: Record<string, { server: string; token: string }> };
  run(args: string[], opts?: { cwd?: string; input?: string; timeoutMs?: number }): Promise<RunResult>;
  /** Starts `berth <args>` without waiting for it (for --follow). */
  start(args: string[], opts?: { cwd?: string }): Running;
  /**
   * Runs `berth <args>` on a pseudo-terminal (util-linux `script`), typing `input`: for the questions
   * a command asks only on a terminal. stdout and stderr both come back in `stdout`.
   */
  runInTerminal(args: string[], input: string, timeoutMs?: number): Promise<RunResult>;
}

export interface Running {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Sends SIGTERM (SIGKILL after 5 s) and resolves with the exit code or signal. */
  stop(): Promise<number | string | null>;
  exited: Promise<number | null>;
}

/** This process's environment without the variables that would point the CLI elsewhere. */
function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('BERTH_') || k === 'DATABASE_URL') delete env[k];
  return env;
}

/** A signed-in CLI user of `server` with `token`. */
export function cliUser(server: { url: string }, token: string): CliUser {
  const home = tempDir('berth-cli-home-');
  const configDir = path.join(home, '.config');
  const configFile = path.join(configDir, 'berth', 'config.json');
  mkdirSync(path.dirname(configFile), { recursive: true, mode: 0o700 });
  writeFileSync(configFile, JSON.stringify({ server: server.url, token }) + '\n', { mode: 0o600 });
  const env = { HOME: home, XDG_CONFIG_HOME: configDir, NO_COLOR: '1' };
  return {
    env,
    home,
    configFile,
    config: () => JSON.parse(readFileSync(configFile, 'utf8')),
    run: (args, opts = {}) => runCli(args, { baseEnv: baseEnv(), env, cwd: opts.cwd ?? home, input: opts.input, timeoutMs: opts.timeoutMs ?? 60000 }),
    start(args, opts = {}) {
      const child = spawn(process.execPath, cliArgv(args), { cwd: opts.cwd ?? home, env: { ...baseEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (err += d));
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      return {
        child,
        stdout: () => out,
        stderr: () => err,
        exited,
        async stop() {
          if (child.exitCode !== null) return child.exitCode;
          child.kill('SIGTERM');
          const t = setTimeout(() => child.kill('SIGKILL'), 5000);
          await exited;
          clearTimeout(t);
          return child.exitCode ?? child.signalCode;
        },
      };
    },
    runInTerminal(args, input, timeoutMs = 60000) {
      const line = [process.execPath, ...cliArgv(args)].map(shq).join(' ');
      return new Promise((resolve, reject) => {
        const child = spawn('script', ['-qec', line, '/dev/null'], { cwd: home, env: { ...baseEnv(), ...env, TERM: 'dumb' }, stdio: ['pipe', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => (stdout += d));
        child.stderr.on('data', (d) => (stderr += d));
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`berth ${args.join(' ')} (on a terminal) timed out\n${stdout}`));
        }, timeoutMs);
        child.on('exit', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr });
        });
        // Typed once the command asks (the question ends with "[y/N] ").
        const typeWhenAsked = setInterval(() => {
          if (!/\[y\/N\] /.test(stdout)) return;
          clearInterval(typeWhenAsked);
          child.stdin.end(input);
        }, 50);
        child.on('exit', () => clearInterval(typeWhenAsked));
      });
    },
  };
}

const shq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The lines of a text, without the empty last one. */
export const lines = (s: string): string[] => s.split('\n').filter((l) => l !== '');
