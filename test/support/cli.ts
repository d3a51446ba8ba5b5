import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
export const CLI = path.join(ROOT, 'src/cli/index.ts');

// `berth serve` as root claims a sandbox uid range in a host-wide registry (src/runtime/uid-range.ts):
// the servers the tests start keep theirs in a temp file, never in /var/lib/berth.
process.env.BERTH_UID_REGISTRY ??= path.join(os.tmpdir(), 'berth-test-uid-ranges.json');

/** The arguments of `node` that run `berth <args>` from the sources (through tsx). */
export function cliArgv(args: string[]): string[] {
  return ['--import', import.meta.resolve('tsx'), CLI, ...args];
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `berth <args>` (through tsx) to completion, with a bounded time: in `cwd` (default the repo),
 * with `baseEnv` (default this process's environment) plus `env`.
 */
export function runCli(args: string[], opts: { env?: Record<string, string>; baseEnv?: NodeJS.ProcessEnv; cwd?: string; input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, cliArgv(args), { cwd: opts.cwd ?? ROOT, env: { BERTH_DISK_LIMITS: 'off', ...(opts.baseEnv ?? process.env), ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`berth ${args.join(' ')} timed out\n${stderr}`));
    }, opts.timeoutMs ?? 60000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `berth serve` and waits for its `api listening on` line. */
export function startServe(args: string[], env: Record<string, string>, timeoutMs = 60000): Promise<ServeProcess> {
  return new Promise((resolve, reject) => {
    // Loop mounts outlive temp folders: a served Berth runs without disk images unless a test asks (docs/runtime.md "Disk limits").
    const child = spawn(process.execPath, cliArgv(['serve', ...args]), { cwd: ROOT, env: { BERTH_DISK_LIMITS: 'off', ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start:\n${out}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /api listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          child,
          url: m[1]!,
          output: () => out,
          async stop(signal = 'SIGTERM') {
            if (child.exitCode !== null) return child.exitCode;
            child.kill(signal);
            const t = setTimeout(() => child.kill('SIGKILL'), 20000);
            const code = await exited;
            clearTimeout(t);
            return code;
          },
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d) => (out += d.toString()));
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before it was ready:\n${out}`));
    });
  });
}
