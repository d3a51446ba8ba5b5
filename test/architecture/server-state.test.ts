import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { SRC, sourceFiles } from './source-files.js';

/**
 * Per-server state lives on the context (docs/decisions.md, "Ports and per-server state"): an area's
 * in `ctx.state.<area>` (src/state.ts), what areas offer each other in `ctx.ports` (src/ports.ts). So
 * two servers in one process (tests, the scale suite) never share a cache, and the core files that
 * declare the context name no area.
 */

const read = (rel: string) => ts.createSourceFile(rel, readFileSync(path.join(SRC, rel), 'utf8'), ts.ScriptTarget.ES2022, false);


test('src/ports.ts, src/state.ts and src/context.ts import no area (each area adds its ports and state by declaration merging)', () => {
  for (const rel of ['ports.ts', 'state.ts', 'context.ts']) {
    const specs = read(rel)
      .statements.filter((s): s is ts.ImportDeclaration | ts.ExportDeclaration => ts.isImportDeclaration(s) || ts.isExportDeclaration(s))
      .map((s) => (s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier) ? s.moduleSpecifier.text : ''));
    assert.deepEqual(specs.filter((s) => s.includes('/modules/')), [], `${rel} imports an area`);
  }
});

/**
 * Module-level values that are state, yet not per server: each names why. Anything else found below
 * is a `let` or a collection written at module level, which two servers in one process would share.
 */
const ALLOWED: Record<string, string> = {
  'db/client.ts pgModule': 'the pg driver, imported once per process on first use (a module, not state)',
  'db/notify.ts pgModule': 'the pg driver, imported once per process on first use (a module, not state)',
  'db/serial.ts byHandle': "keyed by the database handle: each server's queue dies with its handle",
  'edge/acme/cloudflare.ts callCodes': 'keyed by the provider object (a WeakMap): per provider, which is per server',
  'modules/audit/audit.store.ts lastMs': 'the process-wide monotonic clock of audit ids: unique across every server of the process',
  'modules/audit/audit.store.ts seq': 'the process-wide monotonic clock of audit ids: unique across every server of the process',
  'modules/backups/pg-tools.ts pgBinDir': "where the host's pg_dump lives, looked up once: a fact of the machine, the same for every server",
  'runtime/disk-image.ts usable': 'whether this machine can make and loop-mount ext4 images, probed once: a fact of the machine, the same for every server',
  'runtime/disk-usage.ts walked': 'keyed by the folder walked: a fact of the disk, the same for every server that asks',
  'runtime/docker/egress-rules.ts installed': "the host's nftables rules, installed once per machine's kernel, not per server",
};


const MUTATORS = new Set(['set', 'add', 'delete', 'clear', 'push', 'pop', 'shift', 'unshift', 'splice']);

/** `let`/`var` at module level, and module-level `const` collections that the file writes to. */
function moduleState(rel: string): string[] {
  const sf = read(rel);
  const found: string[] = [];
  const written = new Set<string>();
  const visit = (n: ts.Node) => {
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && ts.isIdentifier(n.expression.expression) && MUTATORS.has(n.expression.name.text)) {
      written.add(n.expression.expression.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st)) continue;
    const isConst = (st.declarationList.flags & ts.NodeFlags.Const) !== 0;
    for (const d of st.declarationList.declarations) {
      if (!ts.isIdentifier(d.name)) continue;
      const name = d.name.text;
      const collection = !!d.initializer && ts.isNewExpression(d.initializer) && /^(Map|Set|WeakMap|WeakSet|Array)$/.test(d.initializer.expression.getText(sf));
      if (!isConst || (collection && written.has(name))) found.push(`${rel} ${name}`);
    }
  }
  return found;
}

test('no module-level per-server state outside src/lib/ (a top-level let, or a collection the module writes), but the listed exceptions', () => {
  const files = sourceFiles(SRC).map((f) => path.relative(SRC, f)).filter((f) => !f.startsWith('lib/') && !f.startsWith('cli/') && !f.endsWith('.d.ts'));
  assert.ok(files.length > 200, `files read: ${files.length}`);
  const found = files.flatMap(moduleState);
  assert.deepEqual(found.filter((f) => !(f in ALLOWED)), [], 'module-level state: move it to ctx.state.<area> (src/state.ts), or list it with a reason');
  // Every exception still exists (a stale entry would let a new one in under its name).
  assert.deepEqual(Object.keys(ALLOWED).filter((k) => !found.includes(k)), [], 'exceptions that no longer exist');
});

test('the scan finds module state when there is some (so the check above is not vacuous)', () => {
  assert.ok(moduleState('modules/audit/audit.store.ts').includes('modules/audit/audit.store.ts seq'));
});
