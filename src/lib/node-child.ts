import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { bundledEntry } from './ts-bundle.js';

/**
 * Starts the Node script `name` beside the caller (`from`: the caller's `import.meta.url`) as a child
 * process: `<name>.js` in the built server; under tsx (the tests, `npx tsx`) `<name>.ts` bundled into
 * one plain module (ts-bundle.ts), which node runs without tsx's hooks. The child process
 * counterpart of worker-file.ts.
 *
 * The child gets an argument array and a minimal environment (`PATH`, `LANG`, and what the caller
 * adds in `opts.env`): none of the server's secrets. It runs with the start script's node flag (`--max-semi-space-size=8`, package.json).
 */
export function startNodeChild(from: string, name: string, args: string[], opts: { stdio: StdioOptions; signal?: AbortSignal; env?: Record<string, string> }): ChildProcess {
  const script = from.endsWith('.ts') ? bundledEntry(fileURLToPath(new URL(`./${name}.ts`, from))) : fileURLToPath(new URL(`./${name}.js`, from));
  const env: Record<string, string> = {};
  for (const k of ['PATH', 'LANG']) if (process.env[k]) env[k] = process.env[k]!;
  Object.assign(env, opts.env);
  return spawn(process.execPath, ['--max-semi-space-size=8', script, ...args], {
    env,
    stdio: opts.stdio,
    ...(opts.signal ? { signal: opts.signal, killSignal: 'SIGKILL' as const } : {}),
  });
}
