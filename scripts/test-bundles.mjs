// The test files as plain ES modules, for scripts/test.mjs: one esbuild build of them all (tsx's own
// compiler), their shared sources in shared chunks, packages left as imports. A test process then
// runs under plain node: loading tsx's hooks and resolving the server's few hundred sources through
// them cost each of the suites' 340 processes about a second (docs/decisions.md, "Test files run
// as bundles").
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const SOURCE = /\.[cm]?tsx?$/;

/**
 * A module keeps its own place: `import.meta.url`, `.dirname` and `.filename` name its source file,
 * not the chunk it ends up in (the sources find fixtures, workers and their `dist` beside them).
 */
const ownPlace = {
  name: 'berth-own-place',
  setup(build) {
    build.onLoad({ filter: SOURCE }, (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      let text = readFileSync(args.path, 'utf8');
      if (text.includes('import.meta.')) {
        text = text
          .replace(/\bimport\.meta\.url\b/g, JSON.stringify(pathToFileURL(args.path).href))
          .replace(/\bimport\.meta\.dirname\b/g, JSON.stringify(path.dirname(args.path)))
          .replace(/\bimport\.meta\.filename\b/g, JSON.stringify(args.path));
      }
      const ext = path.extname(args.path);
      return { contents: text, loader: ext.endsWith('x') ? 'tsx' : 'ts' };
    });
  },
};

/**
 * A test file that imports a module whose path it computes (`await import(someUrl)`) needs tsx's
 * hooks: such a file is not bundled and runs as before.
 */
export function needsTsx(file) {
  return /\bimport\(\s*(?!['"`])/.test(readFileSync(file, 'utf8').replace(/import\(\s*['"][^'"]+['"]\s*\)/g, ''));
}

/**
 * Bundles `files` into `outDir` (emptied first); returns each file's bundle, by the file's path.
 * Files that need tsx are left out of the map.
 */
export async function bundleTests(root, files, outDir) {
  const require = createRequire(import.meta.url);
  const esbuild = require('esbuild');
  const entries = files.filter((f) => !needsTsx(f));
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const result = await esbuild.build({
    entryPoints: entries,
    outdir: outDir,
    outbase: root,
    bundle: true,
    splitting: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    keepNames: true,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    absWorkingDir: root,
    logLevel: 'silent',
    plugins: [ownPlace],
  });
  if (result.errors.length) throw new Error(result.errors.map((e) => e.text).join('\n'));
  const out = new Map();
  for (const f of entries) {
    const rel = path.relative(root, f);
    out.set(f, path.join(outDir, rel.replace(SOURCE, '.mjs')));
  }
  return out;
}
