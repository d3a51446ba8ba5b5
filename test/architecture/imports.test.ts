import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { SRC as ROOT, sourceFiles } from './source-files.js';

/**
 * The structure of src/, checked on every run (docs/architecture.md, "Layers and areas"):
 * - an area (src/modules/<area>/) is reached by other areas only through its index.ts;
 * - the layers below the areas (lib, db, authz, http, jobs, runtime, edge) never import an area's code;
 * - lib imports nothing of Berth but lib; authz nothing but lib and authz;
 * - no import cycle between areas, and none between files (value imports: `import type` is erased).
 */

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

/** Every relative import and re-export of every file under src/, parsed by the TypeScript compiler. */
function importEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const file of sourceFiles(ROOT)) {
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false);
    const add = (spec: ts.Expression | undefined, typeOnly: boolean) => {
      if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) return;
      const to = path.resolve(path.dirname(file), spec.text.replace(/\.js$/, '.ts'));
      edges.push({ from: path.relative(ROOT, file), to: path.relative(ROOT, to), typeOnly });
    };
    for (const st of sf.statements) {
      if (ts.isImportDeclaration(st)) {
        const clause = st.importClause;
        const typeOnly =
          !!clause &&
          (clause.isTypeOnly ||
            (!clause.name && !!clause.namedBindings && ts.isNamedImports(clause.namedBindings) && clause.namedBindings.elements.length > 0 && clause.namedBindings.elements.every((e) => e.isTypeOnly)));
        add(st.moduleSpecifier, typeOnly);
      } else if (ts.isExportDeclaration(st)) {
        add(st.moduleSpecifier, st.isTypeOnly);
      }
    }
  }
  return edges;
}

const areaOf = (file: string): string | null => /^modules\/([^/]+)\//.exec(file)?.[1] ?? null;
const layerOf = (file: string): string => file.split('/')[0]!.replace(/\.ts$/, '');

const edges = importEdges();

test('the scan reads the imports (so the checks below are not vacuous)', () => {
  assert.ok(edges.length > 200, `edges found: ${edges.length}`);
  assert.ok(edges.some((e) => e.typeOnly) && edges.some((e) => !e.typeOnly), 'both type-only and value imports are seen');
  assert.ok(edges.some((e) => areaOf(e.from) !== null && areaOf(e.to) !== null && areaOf(e.from) !== areaOf(e.to)), 'some area reaches another');
});

/** The database schema is the one place that names every area's tables (types only). */
const tablesTypes = (e: Edge): boolean => e.from === 'db/schema.ts' && e.typeOnly && /^modules\/[^/]+\/[^/]+\.tables\.ts$/.test(e.to);

test('an area is reached from outside only through its index.ts', () => {
  const reaches = edges.filter((e) => {
    const to = areaOf(e.to);
    return to !== null && areaOf(e.from) !== to && e.to !== `modules/${to}/index.ts` && !tablesTypes(e);
  });
  assert.deepEqual(reaches.map((e) => `${e.from} -> ${e.to}`), []);
});

test('the layers below the areas import no area code (types of the ports excepted)', () => {
  const below = new Set(['lib', 'db', 'authz', 'http', 'jobs', 'runtime', 'edge', 'context', 'ports', 'config', 'config-hardening']);
  const up = edges.filter((e) => below.has(layerOf(e.from)) && areaOf(e.to) !== null && !e.typeOnly);
  assert.deepEqual(up.map((e) => `${e.from} -> ${e.to}`), []);
});

test('lib depends on nothing of Berth but lib, and authz on nothing but lib and authz', () => {
  const allowed: Record<string, Set<string>> = { lib: new Set(['lib']), authz: new Set(['lib', 'authz']) };
  const bad = edges.filter((e) => allowed[layerOf(e.from)] && !allowed[layerOf(e.from)]!.has(layerOf(e.to)) && !e.typeOnly);
  assert.deepEqual(bad.map((e) => `${e.from} -> ${e.to}`), []);
});

/** Strongly connected components of more than one node (Tarjan), each sorted. */
function cycles(nodes: Iterable<string>, next: (n: string) => string[]): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of next(v)) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const n of nodes) if (!idx.has(n)) visit(n);
  return out;
}

test('no import cycle between areas', () => {
  const graph = new Map<string, Set<string>>();
  for (const e of edges) {
    const a = areaOf(e.from);
    const b = areaOf(e.to);
    if (!a || !b || a === b || e.typeOnly) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    graph.get(a)!.add(b);
  }
  assert.deepEqual(cycles(graph.keys(), (n) => [...(graph.get(n) ?? [])]), []);
});

test('no import cycle between files', () => {
  const graph = new Map<string, string[]>();
  for (const e of edges) {
    if (e.typeOnly) continue;
    graph.set(e.from, [...(graph.get(e.from) ?? []), e.to]);
  }
  assert.deepEqual(cycles(graph.keys(), (n) => graph.get(n) ?? []), []);
});
