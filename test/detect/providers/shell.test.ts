import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, tempApp as app } from './support.js';

describe('shell provider', () => {
  const cases = casesOf('shell');
  it('has its corpus case', () => assert.equal(cases.length, 1, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does (sh start.sh)`, () => expectPlan(name));

  it('runs the script railpack.json names (shell.script), when it exists', () => {
    const got = scanProject(app({ 'run.sh': 'echo hi\n', 'railpack.json': '{ "shell": { "script": "run.sh" } }' }));
    assert.equal(got.runtime, 'shell');
    assert.equal(got.plan.start, 'sh run.sh');
    assert.deepEqual(parseCommand(got.plan.start!)[0]?.argv, ['sh', 'run.sh']);
  });

  it('falls back to start.sh when the named script is missing or leaves the folder, and is no app without a script', () => {
    assert.equal(scanProject(app({ 'start.sh': 'echo\n', 'railpack.json': '{ "shell": { "script": "gone.sh" } }' })).plan.start, 'sh start.sh');
    assert.equal(scanProject(app({ 'start.sh': 'echo\n', 'railpack.json': '{ "shell": { "script": "../start.sh" } }' })).plan.start, 'sh start.sh');
    assert.equal(scanProject(app({ 'railpack.json': '{ "shell": { "script": "gone.sh" } }' })).runtime, 'unknown');
  });

  it('comes after every language provider', () => {
    assert.equal(scanProject(app({ 'start.sh': 'echo\n', Gemfile: 'gem "rack"\n' })).runtime, 'ruby');
    assert.equal(scanProject(app({ 'start.sh': 'echo\n', 'index.html': '<p>' })).runtime, 'static');
  });
});
