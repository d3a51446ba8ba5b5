import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Starts the Node script `name` beside the caller (`from`: the caller's `import.meta.url`) as a child
 * process: `<name>.js` in the built server. Under tsx (the tests, `npx tsx`) the script is
 * `<name>.ts`, bundled once per process by esbuild (tsx's own compiler) into one plain `.mjs` file
 * that node runs without tsx: loading tsx's hooks in every child cost 0.4-0.5 s of start-up per
 * child, which the suites paid on every backup and restore of a volume. The child process
 * counterpart of worker-file.ts.
 *
 * The child gets an argument array and a minimal environment (`PATH`, `LANG`): none of the server's
 * secrets. It runs with the start script's node flag (`--max-semi-space-size=8`, package.json).
 */
export function startNodeChild(from: string, name: string, args: string[], opts: { stdio: StdioOptions; signal?: AbortSignal }): ChildProcess {
  const script = from.endsWith('.ts') ? bundled(fileURLToPath(new URL(`./${name}.ts`, from))) : fileURLToPath(new URL(`./${name}.js`, from));
  const env: Record<string, string> = {};
  for (const k of ['PATH', 'LANG']) if (process.env[k]) env[k] = process.env[k]!;
  return spawn(process.execPath, ['--max-semi-space-size=8', script, ...args], {
    env,
    stdio: opts.stdio,
    ...(opts.signal ? { signal: opts.signal, killSignal: 'SIGKILL' as const } : {}),
  });
}

const bundles = new Map<string, string>();

/**
 * The TypeScript entry `entry` and everything it imports as one ES module file, named by the bundle's
 * own hash (so concurrent test processes share it, and a changed source never runs stale) in
 * `node_modules/.cache/berth-node-child` (the checkout's own folder, not a shared temp directory
 * another user could plant a file in): written to a temp name and renamed into place.
 */
function bundled(entry: string): string {
  const known = bundles.get(entry);
  if (known) return known;
  // esbuild comes with tsx, which only runs the TypeScript sources: the built server never gets here.
  const require = createRequire(import.meta.url);
  const esbuild = require('esbuild') as typeof import('esbuild');
  const out = esbuild.buildSync({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    logLevel: 'silent',
    // Bundled CommonJS dependencies may call require: give the module one.
    banner: { js: "import { createRequire as __berthRequire } from 'node:module'; const require = __berthRequire(import.meta.url);" },
  });
  const code = out.outputFiles[0]!.contents;
  const modules = require.resolve('esbuild').replace(/([\\/]node_modules)[\\/].*$/, '$1');
  const dir = path.join(modules, '.cache', 'berth-node-child');
  const file = path.join(dir, `${path.basename(entry, '.ts')}-${createHash('sha256').update(code).digest('hex').slice(0, 16)}.mjs`);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, code, { mode: 0o644 });
    renameSync(tmp, file);
  }
  bundles.set(entry, file);
  return file;
}
