import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { detectFolder } from '../../../src/modules/detect/detect.js';
import { Facts } from '../../../src/modules/detect/facts.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

describe('gleam provider', () => {
  const cases = casesOf('gleam');
  it('has its corpus case', () => assert.equal(cases.length, 1, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does (an erlang shipment)`, () => expectPlan(name));

  it('plans commands the runner accepts and needs gleam and erl', () => {
    const f = new Facts(path.join(FIXTURES, 'gleam'), '', null);
    const d = detectFolder(f);
    for (const cmd of [...d.build, d.start!]) assert.doesNotThrow(() => parseCommand(cmd), cmd);
    assert.deepEqual(d.programs, ['gleam', 'erl']);
  });

  it('pins no version without mise or .tool-versions (gleam.toml holds a range)', () => {
    const got = scanProject(app({ 'gleam.toml': 'name = "x"\ngleam = ">= 1.0.0"\n' }));
    assert.equal(got.runtime, 'gleam');
    assert.equal(got.plan.version, undefined);
    assert.equal(got.plan.start, './build/erlang-shipment/entrypoint.sh run');
  });
});
