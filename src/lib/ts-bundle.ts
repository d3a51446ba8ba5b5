import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const bundles = new Map<string, string>();

/**
 * The TypeScript module `entry` with every source file it imports as one plain ES module file, for
 * a child process or worker thread started from the TypeScript sources (under tsx: the tests, `npx
 * tsx`). Loading tsx's hooks in each child or worker cost 0.3-0.5 s of start-up apiece, which the
 * suites paid on every volume backup and restore and every server's edge thread; esbuild (tsx's own
 * compiler) bundles the entry once per process in about 50 ms instead. Packages stay imports, found
 * in the checkout's node_modules as the sources find them. The built server never gets here: it
 * starts its `.js` files.
 *
 * The file is named by the bundle's own hash (so concurrent test processes share it, and a changed
 * source never runs stale) in `node_modules/.cache/berth-ts-bundles` (the checkout's own folder, not
 * a shared temp directory another user could plant a file in), written to a temp name and renamed
 * into place.
 */
export function bundledEntry(entry: string): string {
  const known = bundles.get(entry);
  if (known) return known;
  const require = createRequire(import.meta.url);
  const esbuild = require('esbuild') as typeof import('esbuild');
  const out = esbuild.buildSync({
    entryPoints: [entry],
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    logLevel: 'silent',
  });
  const code = out.outputFiles[0]!.contents;
  const modules = require.resolve('esbuild').replace(/([\\/]node_modules)[\\/].*$/, '$1');
  const dir = path.join(modules, '.cache', 'berth-ts-bundles');
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
