import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { stepCommands } from '../../../src/modules/detect/providers/railpack-config.js';
import { parseJsonc } from '../../../src/modules/detect/facts.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { casesOf, expectPlan, tempApp as app } from './support.js';

describe('railpack.json', () => {
  const cases = casesOf('railpack-config');
  it('has its two corpus cases', () => assert.equal(cases.length, 2, cases.join(', ')));
  for (const name of cases) it(`plans ${name}: its start command, steps and variables apply`, () => expectPlan(name));

  it('reads JSON with comments and trailing commas, leaving strings alone', () => {
    assert.deepEqual(parseJsonc('{ "a": "http://x/*y*/", // c\n "b": [1, 2,], /* z */ }'), { a: 'http://x/*y*/', b: [1, 2] });
    assert.deepEqual(parseJsonc('{"q": "say \\"hi\\" // not a comment"}'), { q: 'say "hi" // not a comment' });
  });

  it('replaces the detected commands unless "..." places them, taking strings, RUN: strings and {cmd} objects', () => {
    assert.deepEqual(stepCommands(['a', '...', 'RUN:b', 'RUN#named:c', { cmd: 'd' }, { src: '.', dest: '.' }, 'COPY:x y', 'ENV:A=1', 7, ''], ['x1', 'x2']), ['a', 'x1', 'x2', 'b', 'c', 'd']);
    assert.deepEqual(stepCommands(['only'], ['x']), ['only']);
    assert.equal(stepCommands(undefined, ['x']), null);
  });

  it('wins over the Procfile', () => {
    const got = scanProject(app({ Gemfile: 'gem "rack"\n', 'config.ru': '', Procfile: 'web: bundle exec puma\n', 'railpack.json': '{ "deploy": { "startCommand": "bundle exec falcon serve" } }' }));
    assert.equal(got.plan.start, 'bundle exec falcon serve');
  });

  it('plans with the provider it names (and the Procfile applies again); an unknown name is ignored', () => {
    const files = { Gemfile: 'gem "rack"\n', 'config.ru': '', 'package.json': '{"name":"x","scripts":{"start":"node server.js"}}', Procfile: 'worker: node worker.js\n' };
    const forced = scanProject(app({ ...files, 'railpack.json': '{ "provider": "Node" }' }));
    assert.equal(forced.runtime, 'node');
    assert.equal(forced.plan.start, 'node worker.js');
    assert.equal(scanProject(app({ ...files, 'railpack.json': '{ "provider": "cobol" }' })).runtime, 'ruby');
    assert.equal(scanProject(app({ 'index.php': '<?php', 'railpack.json': '{ "provider": "staticfile" }' })).runtime, 'static');
  });

  it('ignores a railpack.json that does not parse, and variables that are not strings', () => {
    assert.equal(scanProject(app({ 'index.php': '<?php', 'railpack.json': '{ "deploy": ' })).plan.start, 'php -S 0.0.0.0:${PORT:-8080} -t .');
    const got = scanProject(app({ 'index.php': '<?php', 'railpack.json': '{ "deploy": { "variables": { "A": "1", "B": 2, "bad name": "x" } } }' }));
    assert.deepEqual(got.plan.variables, { A: '1' });
  });

  it('pins the runtime version from packages', () => {
    assert.equal(scanProject(app({ 'index.php': '<?php', 'railpack.json': '{ "packages": { "php": "8.3", "node": "22" } }' })).plan.version, '8.3');
  });
});
