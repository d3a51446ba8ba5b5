import { Worker } from 'node:worker_threads';

/**
 * Starts the worker thread whose module is `name` beside the caller (`from`: the caller's
 * `import.meta.url`): `<name>.js` in the built server; under tsx (the tests, `npx tsx`) `<name>.ts`,
 * loaded after registering tsx's hooks on the worker's thread (tsx's own `--import` does not reach
 * workers).
 */
export function startWorker(from: string, name: string, workerData: unknown): Worker {
  if (!from.endsWith('.ts')) return new Worker(new URL(`./${name}.js`, from), { workerData });
  const file = new URL(`./${name}.ts`, from).href;
  const api = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(file)}); })`;
  return new Worker(code, { eval: true, workerData });
}
