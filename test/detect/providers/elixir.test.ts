import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { detectFolder } from '../../../src/modules/detect/detect.js';
import { Facts } from '../../../src/modules/detect/facts.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

const MIX = (extra = '') => `defmodule A.MixProject do\n  def project, do: [app: :shop, elixir: "~> 1.16", deps: []]\n${extra}end\n`;

describe('elixir provider', () => {
  const cases = casesOf('elixir');
  it('has its two corpus cases', () => assert.equal(cases.length, 2, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does (a mix release)`, () => expectPlan(name));

  it('plans commands the runner accepts (no shell operators, no globs)', () => {
    for (const name of cases) {
      const { plan } = scanProject(path.join(FIXTURES, name));
      for (const cmd of [...plan.install, ...plan.build, ...(plan.start ? [plan.start] : [])]) assert.doesNotThrow(() => parseCommand(cmd), `${name}: ${cmd}`);
    }
  });

  it('runs every mix step that depends on the environment with MIX_ENV=prod', () => {
    const { plan } = scanProject(path.join(FIXTURES, 'elixir-phoenix'));
    for (const cmd of [...plan.install, ...plan.build].filter((c) => !/local\.(hex|rebar)/.test(c))) {
      const [step] = parseCommand(cmd);
      assert.equal(step?.env.MIX_ENV, 'prod', cmd);
    }
    const [start] = parseCommand(plan.start!);
    assert.equal(start?.env.PHX_SERVER, 'true');
    assert.deepEqual(start?.argv, ['_build/prod/rel/hello/bin/hello', 'start']);
  });

  it('installs a Phoenix assets/package.json from the app folder, and runs ecto.deploy when mix.exs names it', () => {
    const got = detectFolder(new Facts(app({
      'mix.exs': MIX('  defp aliases, do: ["ecto.deploy": ["ecto.migrate"]]\n'),
      'assets/package.json': '{"name":"assets"}',
      'assets/package-lock.json': '{"lockfileVersion":3}',
    }), '', null));
    assert.ok(got.install.includes('npm ci --prefix assets'), got.install.join(' | '));
    assert.ok(got.programs.includes('node'));
    assert.deepEqual(got.build, ['MIX_ENV=prod mix compile', 'MIX_ENV=prod mix ecto.deploy', 'MIX_ENV=prod mix release']);
  });

  it('takes mise over .elixir-version over mix.exs', () => {
    assert.equal(scanProject(app({ 'mix.exs': MIX() })).plan.version, '1.16');
    assert.equal(scanProject(app({ 'mix.exs': MIX(), '.elixir-version': '1.17.2\n' })).plan.version, '1.17.2');
    assert.equal(scanProject(app({ 'mix.exs': MIX(), '.elixir-version': '1.17.2\n', 'mise.toml': '[tools]\nelixir = "1.18.1"\n' })).plan.version, '1.18.1');
  });

  it('gives no start when mix.exs names no app', () => {
    const got = scanProject(app({ 'mix.exs': 'defmodule X do end\n' }));
    assert.equal(got.runtime, 'elixir');
    assert.equal(got.plan.start, undefined);
  });
});
