import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { defineConfig, type Plugin } from 'vite';

const outDir = fileURLToPath(new URL('../dist/web', import.meta.url));

/**
 * Writes `.br` and `.gz` beside every text file of the build, so the server sends them compressed
 * without compressing on each request (src/http/dashboard.ts picks the variant the client accepts).
 */
function precompress(): Plugin {
  let dir = outDir;
  return {
    name: 'berth-precompress',
    apply: 'build',
    configResolved(c) {
      dir = c.build.outDir;
    },
    closeBundle() {
      const walk = (d: string): string[] => readdirSync(d).flatMap((n) => (statSync(path.join(d, n)).isDirectory() ? walk(path.join(d, n)) : [path.join(d, n)]));
      for (const file of walk(dir)) {
        if (!/\.(js|css|html|svg|json)$/.test(file)) continue;
        const body = readFileSync(file);
        if (body.length < 1024) continue;
        writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
        writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
      }
    },
  };
}

// The dashboard: built by `npm install` (prepare -> build) into dist/web, which `berth serve` serves
// at `/` (src/http/dashboard.ts). No dev server or plugin is needed: Vite compiles the TSX itself.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  publicDir: false,
  logLevel: 'warn',
  plugins: [precompress()],
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    rollupOptions: {
      // Two pages: the dashboard, and the API reference that src/http/dashboard.ts serves at /api/docs.
      input: { dashboard: fileURLToPath(new URL('index.html', import.meta.url)), apiDocs: fileURLToPath(new URL('api-docs.html', import.meta.url)) },
      // TanStack Query marks its modules "use client" (for React server components, which this is not).
      onwarn(warning, warn) {
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
});
