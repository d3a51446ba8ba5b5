import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { sourceFiles } from './source-files.js';

/**
 * Stores are private to their area (issue #16, docs/architecture.md "Layers and areas"): every table
 * a file under src/modules/<area>/ names in a query must be declared in that area's own
 * `<area>.tables.ts` (its `...Tables` interface). Cross-area work goes through the owning area's
 * functions (its index.ts) or a port, never through its tables.
 *
 * What counts as naming a table: the first argument of Kysely's `selectFrom`, `updateTable`,
 * `insertInto`, `replaceInto`, `mergeInto`, `deleteFrom` and joins (camelCase with CamelCasePlugin;
 * `x as alias` forms; a variable is read through its type, so `for (const t of ['a', 'b'] as const)
 * db.deleteFrom(t)` names both), `sql.table('x')`, and the text of `sql` templates (`from x`,
 * `join x`, `into x`, in snake_case). The type checker reads the files (it resolves variables).
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const MODULES = path.join(ROOT, 'src/modules');

/**
 * The foundation tables (src/db/schema.ts, `FoundationTables`: users, orgs, memberships, grants,
 * sessions, api tokens, audit events, jobs, leases, login failures) have no owning area's tables file:
 * the auth, permissions and audit areas share them. Other areas reach them through those areas.
 */
const FOUNDATION_AREAS = ['auth', 'permissions', 'audit'];

/**
 * Deliberate exceptions, `file: table` (file relative to src/modules/). Keep it small; each says why.
 */
const ALLOWED: Record<string, string> = {
  // Row lock (`select ... for update`) serialising one user's concurrent upload-session opens on
  // PostgreSQL. Not changed here (the uploads area is another change's); an auth-area `lockUser` would
  // replace it.
  'uploads/uploads.store.ts: users': 'uploads locks the user row (pending: an auth-area function)',
};

const KYSELY_METHODS = new Set([
  'selectFrom',
  'updateTable',
  'insertInto',
  'replaceInto',
  'mergeInto',
  'deleteFrom',
  'innerJoin',
  'leftJoin',
  'rightJoin',
  'fullJoin',
  'innerJoinLateral',
  'leftJoinLateral',
  'crossJoin',
  'crossJoinLateral',
]);

/** Property names of the exported interface `name` in `file` (its tables). */
function interfaceKeys(file: string, test: (name: string) => boolean): string[] {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, false);
  const keys: string[] = [];
  for (const st of sf.statements) {
    if (!ts.isInterfaceDeclaration(st) || !test(st.name.text)) continue;
    for (const m of st.members) if (m.name && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name))) keys.push(m.name.text);
  }
  return keys;
}

const camel = (snake: string): string => snake.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const tableOf = (expr: string): string => expr.trim().split(/\s+as\s+/i)[0]!.trim();

const areas = readdirSync(MODULES).filter((n) => statSync(path.join(MODULES, n)).isDirectory());
const foundation = new Set(interfaceKeys(path.join(ROOT, 'src/db/schema.ts'), (n) => n === 'FoundationTables'));
const ownTables = new Map<string, Set<string>>();
for (const area of areas) {
  const file = path.join(MODULES, area, `${area}.tables.ts`);
  let keys: string[] = [];
  try {
    keys = interfaceKeys(file, (n) => /Tables$/.test(n));
  } catch {
    /* an area without tables of its own */
  }
  ownTables.set(area, new Set([...keys, ...(FOUNDATION_AREAS.includes(area) ? foundation : [])]));
}
const allTables = new Set([...foundation, ...[...ownTables.values()].flatMap((s) => [...s])]);

type Use = { file: string; area: string; table: string };
let scanned: Use[] | null = null;

/** Every table each file of an area names (scanned once: the type checker takes a few seconds). */
function tableUses(): Use[] {
  scanned ??= scan();
  return scanned;
}

function scan(): Use[] {
  const parsed = ts.parseJsonConfigFileContent(ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), ts.sys.readFile).config, ts.sys, ROOT);
  const files = sourceFiles(MODULES);
  const program = ts.createProgram(files, { ...parsed.options, noEmit: true });
  const checker = program.getTypeChecker();
  const uses: Use[] = [];
  for (const file of files) {
    const sf = program.getSourceFile(file)!;
    const rel = path.relative(MODULES, file);
    const area = rel.split(path.sep)[0]!;
    const ctes = new Set<string>();
    const found: string[] = [];
    const literalsOf = (node: ts.Expression): string[] => {
      if (ts.isStringLiteralLike(node)) return [node.text];
      if (ts.isArrayLiteralExpression(node)) return node.elements.flatMap((e) => literalsOf(e as ts.Expression));
      if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) return []; // a subquery builder: its own calls are visited
      const type = checker.getTypeAtLocation(node);
      const parts = type.isUnion() ? type.types : [type];
      const out: string[] = [];
      for (const t of parts) {
        if (t.isStringLiteral()) out.push(t.value);
        else if (checker.isTupleType(t) || checker.isArrayType(t)) {
          for (const a of checker.getTypeArguments(t as ts.TypeReference)) {
            for (const u of a.isUnion() ? a.types : [a]) out.push(u.isStringLiteral() ? u.value : `<${checker.typeToString(u)}>`);
          }
        } else out.push(`<${checker.typeToString(t)}: ${node.getText(sf)}>`);
      }
      return out;
    };
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
        const name = node.expression.name.text;
        const arg = node.arguments[0];
        if (arg && KYSELY_METHODS.has(name)) found.push(...literalsOf(arg).map(tableOf));
        if (arg && name === 'with' && ts.isStringLiteralLike(arg)) ctes.add(tableOf(arg.text));
        if (arg && name === 'table' && node.expression.expression.getText(sf) === 'sql') found.push(...literalsOf(arg).map((t) => camel(tableOf(t))));
      }
      if (ts.isTaggedTemplateExpression(node) && node.tag.getText(sf) === 'sql') {
        const t = node.template;
        const text = ts.isNoSubstitutionTemplateLiteral(t) ? t.text : [t.head.text, ...t.templateSpans.map((s) => s.literal.text)].join(' ${} ');
        for (const m of text.matchAll(/\b(?:from|join|into)\s+"?([a-z_][a-z0-9_]*)"?/gi)) found.push(camel(m[1]!.toLowerCase()));
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
    for (const table of new Set(found)) if (!ctes.has(table)) uses.push({ file: rel, area, table });
  }
  return uses;
}

test('an area queries only the tables of its own <area>.tables.ts (the foundation tables: auth, permissions, audit)', () => {
  const uses = tableUses();
  assert.ok(uses.length > 50, `the scan found table uses (${uses.length})`);
  const violations = uses
    .filter((u) => !ownTables.get(u.area)!.has(u.table))
    .map((u) => `${u.file}: ${u.table}`)
    .filter((v) => !(v in ALLOWED));
  if (violations.length) console.log(`tables of another area, or not tables:\n  ${violations.join('\n  ')}`);
  assert.deepEqual(violations, []);
});

test('every allowed exception still happens (the list does not outlive its reason)', () => {
  const seen = new Set(tableUses().map((u) => `${u.file}: ${u.table}`));
  assert.deepEqual(Object.keys(ALLOWED).filter((k) => !seen.has(k)), []);
});

test('every table an area names is a table of the database', () => {
  const unknown = tableUses().filter((u) => !allTables.has(u.table)).map((u) => `${u.file}: ${u.table}`);
  assert.deepEqual(unknown, []);
});
