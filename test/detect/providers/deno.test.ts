import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { planBuild } from '../../../src/modules/detect/build-plan.js';
import { parseJsonc } from '../../../src/modules/detect/facts.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

const SERVE = 'Deno.serve(() => new Response("hi"));\n';

describe('deno provider', () => {
  const cases = casesOf('deno');
  it('has its three corpus cases', () => assert.equal(cases.length, 3, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does`, () => expectPlan(name));

  it('plans commands the runner accepts', () => {
    for (const name of cases) {
      const { plan } = scanProject(path.join(FIXTURES, name));
      for (const cmd of [...plan.install, ...plan.build, ...(plan.start ? [plan.start] : [])]) assert.doesNotThrow(() => parseCommand(cmd), `${name}: ${cmd}`);
    }
  });

  it('takes deno from the npm registry (pinned when the project pins it), no host program', () => {
    const plain = planBuild(path.join(FIXTURES, 'deno'), path.join(FIXTURES, 'deno'));
    assert.deepEqual(plain.tools, [{ name: 'deno' }]);
    assert.deepEqual(plain.programs, []);
    assert.deepEqual(planBuild(path.join(FIXTURES, 'deno-main'), path.join(FIXTURES, 'deno-main')).tools, [{ name: 'deno', version: '2.1.4' }]);
    const dir = app({ 'deno.json': '{}', 'main.ts': SERVE, '.deno-version': 'v2.0.6\n' });
    assert.deepEqual(planBuild(dir, dir).tools, [{ name: 'deno', version: '2.0.6' }]);
  });

  it('reads JSON with comments and trailing commas, leaving strings alone', () => {
    assert.deepEqual(parseJsonc('{\n  // a comment\n  "a": "http://x/*y*/", /* block */\n  "b": [1, 2,],\n}\n'), { a: 'http://x/*y*/', b: [1, 2] });
    assert.deepEqual(parseJsonc('{"q": "say \\"hi\\" // not a comment"}'), { q: 'say "hi" // not a comment' });
    assert.equal(parseJsonc('{ nope'), null);
  });

  it('a start task in its object form, and a build task that runs before the cache step', () => {
    const got = scanProject(app({ 'deno.jsonc': '{ "tasks": { "build": "deno run -A dev.ts build", "start": { "command": "deno serve -A main.ts", "description": "serve" } } }', 'main.ts': SERVE }));
    assert.deepEqual(got.plan, { runtime: 'deno', install: [], build: ['deno task build', 'deno cache main.ts'], start: 'deno task start' });
  });

  it('prefers main.ts over main.js at the root, and skips dependency and hidden folders when searching', () => {
    assert.equal(scanProject(app({ 'deno.json': '{}', 'main.js': SERVE, 'main.ts': SERVE })).plan.start, 'deno run --allow-all main.ts');
    const searched = scanProject(app({ 'deno.json': '{}', '.github/a.ts': '', 'node_modules/a/index.js': '', 'app/types.d.ts': '', 'app/server.ts': SERVE }));
    assert.equal(searched.plan.start, 'deno run --allow-all app/server.ts');
  });

  it('an invalid deno.json is still Deno; no source file at all is no start', () => {
    const invalid = scanProject(app({ 'deno.json': '{ "tasks": ', 'main.ts': SERVE }));
    assert.equal(invalid.runtime, 'deno');
    assert.equal(invalid.plan.start, 'deno run --allow-all main.ts');
    const empty = scanProject(app({ 'deno.json': '{}' }));
    assert.deepEqual(empty.plan, { runtime: 'deno', install: [], build: [] });
    assert.equal(empty.port, null);
  });

  it('a lone main.ts importing from jsr: is not Deno without a deno.json (Railpack does not claim it)', () => {
    const got = scanProject(app({ 'main.ts': 'import { serve } from "jsr:@std/http";\nimport x from "https://deno.land/x/y/mod.ts";\n' }));
    assert.notEqual(got.runtime, 'deno');
  });
});
