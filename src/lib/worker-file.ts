import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { bundledEntry } from './ts-bundle.js';

/**
 * Starts the worker thread whose module is `name` beside the caller (`from`: the caller's
 * `import.meta.url`): `<name>.js` in the built server; under tsx (the tests, `npx tsx`) `<name>.ts`
 * bundled into one plain module (ts-bundle.ts), started without tsx: loading tsx's hooks on each
 * worker's thread cost 0.25 s of every server's start in the suites.
 */
export function startWorker(from: string, name: string, workerData: unknown): Worker {
  if (!from.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, from), { workerData });
  // execArgv: not this process's `--import tsx`, which would load tsx's hooks on the worker's thread again.
  return new Worker(bundledEntry(fileURLToPath(new URL(`./${name}.ts`, from))), { workerData, execArgv: [] });
}
