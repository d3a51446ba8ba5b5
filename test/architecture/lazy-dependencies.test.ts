import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { SRC, sourceFiles } from './source-files.js';

/**
 * Dependencies that only some servers use are loaded on first use (docs/architecture.md, "Memory"):
 * a static value import anywhere in the server's graph would load them at every start. Kysely's
 * values come from its CommonJS build (`src/db/kysely.ts`): one `import { sql } from 'kysely'`
 * loads its 262-file ESM build beside it (about 6 MB).
 */
const LAZY: Record<string, string[]> = {
  kysely: [],
  dockerode: [],
  '@peculiar/x509': [],
  // s3-storage.ts itself is imported only with `await import()` (backups/storage.ts).
  '@aws-sdk/': ['modules/backups/s3-storage.ts'],
  undici: [],
  '@octokit/core': [],
  'acme-client': [],
  '@fastify/send': [],
  semver: [],
  json5: [],
  'jsonc-parser': [],
  'smol-toml': [],
};

/** `import ... from 'pkg'` statements that bring values (not `import type`), with the package named. */
function valueImports(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^import\s+(?!type\s)([^;]*?)\s+from\s+'([^']+)'/gms)) out.push(m[2]!);
  return out;
}

test('packages loaded on first use are never imported as values at the top of a server file', () => {
  const offenders: string[] = [];
  let scanned = 0;
  for (const file of sourceFiles(SRC)) {
    const rel = path.relative(SRC, file);
    for (const spec of valueImports(readFileSync(file, 'utf8'))) {
      scanned++;
      for (const [pkg, allowed] of Object.entries(LAZY)) {
        const hit = pkg.endsWith('/') ? spec.startsWith(pkg) : spec === pkg || spec.startsWith(`${pkg}/`);
        if (hit && !allowed.includes(rel)) offenders.push(`${rel} imports ${spec}`);
      }
    }
  }
  assert.ok(scanned > 500, 'the scan reads the imports');
  assert.deepEqual(offenders, []);
});
