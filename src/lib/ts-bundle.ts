import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const bundles = new Map<string, string>();

/**
 * The TypeScript module `entry` with every source file it imports as one plain ES module file, for
 * a child process or worker thread started from the TypeScript sources (under tsx: the tests, `npx
 * tsx`). Loading tsx's hooks in each child or worker cost 0.3-0.5 s of start-up apiece, which the
 * suites paid on every volume backup and restore and every server's edge thread. Packages stay
 * imports, found in the checkout's node_modules as the sources find them. The built server never
 * gets here: it starts its `.js` files.
 *
 * esbuild (tsx's own compiler) bundles the entry when a source it used has changed since the last
 * bundle (their sizes and modification times are kept beside it); a process that finds them
 * unchanged reuses the file without loading esbuild (150 ms). Files live in
 * `node_modules/.cache/berth-ts-bundles` (the checkout's own folder, not a shared temp directory
 * another user could plant a file in), written to a temp name and renamed into place, so concurrent
 * test processes share them.
 */
export function bundledEntry(entry: string): string {
  const known = bundles.get(entry);
  if (known) return known;
  const require = createRequire(import.meta.url);
  const modules = require.resolve('tsx').replace(/([\\/]node_modules)[\\/].*$/, '$1');
  const dir = path.join(modules, '.cache', 'berth-ts-bundles');
  const name = `${path.basename(entry, '.ts')}-${createHash('sha256').update(entry).digest('hex').slice(0, 12)}`;
  const file = path.join(dir, `${name}.mjs`);
  const manifest = path.join(dir, `${name}.json`);
  if (!unchanged(manifest) || !existsSync(file)) {
    const esbuild = require('esbuild') as typeof import('esbuild');
    const began = Date.now();
    const out = esbuild.buildSync({
      entryPoints: [entry],
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node20',
      write: false,
      metafile: true,
      logLevel: 'silent',
      absWorkingDir: path.dirname(entry),
    });
    const inputs = Object.keys(out.metafile.inputs).map((p) => path.resolve(path.dirname(entry), p));
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    writeAtomically(file, out.outputFiles[0]!.contents);
    const stamps = inputs.map((p) => [p, stamp(p)] as const);
    // A source saved while esbuild read it may not be in this bundle: no manifest, so the next process bundles again.
    if (stamps.every(([, s]) => s !== null && Number(s.split(':')[1]) < began)) writeAtomically(manifest, JSON.stringify(Object.fromEntries(stamps)));
  }
  bundles.set(entry, file);
  return file;
}

/** A source file's size and modification time, or null when it is gone. */
function stamp(p: string): string | null {
  try {
    const s = statSync(p);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return null;
  }
}

/** Whether every source the bundle was made from is as it was then. */
function unchanged(manifest: string): boolean {
  let inputs: Record<string, string | null>;
  try {
    inputs = JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, string | null>;
  } catch {
    return false;
  }
  for (const [p, was] of Object.entries(inputs)) if (stamp(p) !== was) return false;
  return Object.keys(inputs).length > 0;
}

function writeAtomically(file: string, data: string | Uint8Array): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode: 0o644 });
  renameSync(tmp, file);
}
