import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { SRC, sourceFiles } from './source-files.js';

/**
 * Sizes the next engineer can read (issue 35 point 6): no source file over 400 lines, no function
 * over 80 lines unless a comment starting `// Long on purpose:` in the 3 lines above it says why
 * (one declaration after another, a hot path's decisions in order). Generated files (`*.d.ts`) and
 * migrations (one table definition each) are not read.
 */

const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;
const WHY_LONG = '// Long on purpose:';

const files = () => sourceFiles(SRC).filter((f) => !f.endsWith('.d.ts') && !f.includes(`${path.sep}migrations${path.sep}`));

test(`no source file is over ${MAX_FILE_LINES} lines`, () => {
  const long = files()
    .map((f) => ({ rel: path.relative(SRC, f), lines: readFileSync(f, 'utf8').split('\n').length - 1 }))
    .filter((f) => f.lines > MAX_FILE_LINES)
    .map((f) => `${f.rel}: ${f.lines}`);
  assert.deepEqual(long, [], 'split these by responsibility');
});

function longFunctions(file: string): string[] {
  const rel = path.relative(SRC, file);
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  const sf = ts.createSourceFile(rel, text, ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (n: ts.Node) => {
    if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isConstructorDeclaration(n)) && n.body) {
      const first = sf.getLineAndCharacterOfPosition(n.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(n.end).line;
      const saysWhy = lines.slice(Math.max(0, first - 3), first).some((l) => l.trim().startsWith(WHY_LONG));
      if (last - first + 1 > MAX_FUNCTION_LINES && !saysWhy) {
        const name = 'name' in n && n.name ? (n.name as ts.Node).getText(sf) : `(anonymous, line ${first + 1})`;
        found.push(`${rel} ${name}`);
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

test(`no function is over ${MAX_FUNCTION_LINES} lines without a \`${WHY_LONG}\` comment above it`, () => {
  assert.deepEqual(files().flatMap(longFunctions), [], `split it, or say why it is one function in a comment starting "${WHY_LONG}" right above it`);
});
