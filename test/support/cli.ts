import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
export const CLI = path.join(ROOT, 'src/cli/index.ts');

// `berth serve` as root claims a sandbox uid range in a host-wide registry (src/runtime/uid-range.ts):
// the servers the tests start keep theirs in a temp file, never in /var/lib/berth.
process.env.BERTH_UID_REGISTRY ??= path.join(os.tmpdir(), 'berth-test-uid-ranges.json');

export const BUILT_CLI = path.join(ROOT, 'dist/cli/index.js');

/** The newest modification time of the files under `dir` (0 for none). */
function newestUnder(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestUnder(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * Whether the built CLI (dist/, which `npm ci` and `npm run build` write) is at least as new as every
 * source file: then the tests run it, as users do, and each `berth` starts about 0.5 s sooner than
 * through tsx. A source edited since the last build makes them run the sources, so a test never
 * checks stale code. `BERTH_TEST_CLI=src` or `=dist` decides instead.
 */
export const useBuiltCli: boolean = (() => {
  if (process.env.BERTH_TEST_CLI) return process.env.BERTH_TEST_CLI === 'dist';
  try {
    return statSync(BUILT_CLI).mtimeMs >= newestUnder(path.join(ROOT, 'src'));
  } catch {
    return false;
  }
})();

/** The arguments of `node` that run `berth <args>`: the built CLI when it is fresh, else the sources through tsx. */
export function cliArgv(args: string[]): string[] {
  return useBuiltCli ? [BUILT_CLI, ...args] : ['--import', import.meta.resolve('tsx'), CLI, ...args];
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `berth <args>` (see cliArgv) to completion, with a bounded time: in `cwd` (default the repo),
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
