import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { planBuild } from '../../../src/modules/detect/build-plan.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

const pkg = (name: string, extra = '') => `[package]\nname = "${name}"\nversion = "0.1.0"\nedition = "2021"\n${extra}`;
const MAIN = 'fn main() {}\n';

describe('rust provider', () => {
  const cases = casesOf('rust');
  it('has its four corpus cases', () => assert.equal(cases.length, 4, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does`, () => expectPlan(name));

  it('plans commands the runner accepts and needs cargo on the host', () => {
    for (const name of cases) {
      const { plan } = scanProject(path.join(FIXTURES, name));
      for (const cmd of [...plan.install, ...plan.build, ...(plan.start ? [plan.start] : [])]) assert.doesNotThrow(() => parseCommand(cmd), `${name}: ${cmd}`);
    }
    assert.deepEqual(planBuild(path.join(FIXTURES, 'rust'), path.join(FIXTURES, 'rust')).programs, ['cargo']);
  });

  it('an invalid Cargo.toml is still rust, with nothing to build or run', () => {
    const got = scanProject(app({ 'Cargo.toml': '[package\nname = "x"\n', 'src/main.rs': MAIN }));
    assert.equal(got.runtime, 'rust');
    assert.deepEqual(got.plan, { runtime: 'rust', install: [], build: [] });
  });

  it('a library crate has nothing to run', () => {
    const got = scanProject(app({ 'Cargo.toml': pkg('util'), 'src/lib.rs': 'pub fn f() {}\n' }));
    assert.deepEqual(got.plan, { runtime: 'rust', install: [], build: [] });
  });

  it('a workspace without a binary member falls back to the root package, and a virtual one has no start', () => {
    const virtual = scanProject(app({ 'Cargo.toml': '[workspace]\nmembers = ["a", "b"]\n', 'a/Cargo.toml': pkg('a'), 'a/src/lib.rs': '', 'b/Cargo.toml': pkg('b'), 'b/src/lib.rs': '' }));
    assert.deepEqual(virtual.plan, { runtime: 'rust', install: [], build: [] });
    const rooted = scanProject(app({ 'Cargo.toml': `${pkg('app')}\n[workspace]\nmembers = ["lib"]\n`, 'src/main.rs': MAIN, 'lib/Cargo.toml': pkg('lib'), 'lib/src/lib.rs': '' }));
    assert.deepEqual(rooted.plan, { runtime: 'rust', install: [], build: ['cargo build --release'], start: './target/release/app' });
  });

  it('looks at default-members first and skips excluded members', () => {
    const files = {
      'Cargo.toml': '[workspace]\nmembers = ["tools/*", "server"]\nexclude = ["tools/gen"]\ndefault-members = ["server"]\n',
      'tools/gen/Cargo.toml': pkg('gen'),
      'tools/gen/src/main.rs': MAIN,
      'tools/lint/Cargo.toml': pkg('lint'),
      'tools/lint/src/main.rs': MAIN,
      'server/Cargo.toml': pkg('server', '\n[[bin]]\nname = "serve"\npath = "src/main.rs"\n'),
      'server/src/main.rs': MAIN,
    };
    const got = scanProject(app(files));
    assert.deepEqual(got.plan.build, ['cargo build --release --package server']);
    assert.equal(got.plan.start, './target/release/serve', 'the [[bin]] name, not the package name');
    const noDefault = scanProject(app({ ...files, 'Cargo.toml': '[workspace]\nmembers = ["tools/*", "server"]\nexclude = ["tools/gen"]\n' }));
    assert.deepEqual(noDefault.plan.build, ['cargo build --release --package lint'], 'members in order, globs expanded alphabetically, gen excluded');
  });

  it('several binaries and no default-run: built, but no start (cargo would not pick one either)', () => {
    const got = scanProject(app({ 'Cargo.toml': pkg('app'), 'src/main.rs': MAIN, 'src/bin/seed.rs': MAIN, 'src/bin/admin/main.rs': MAIN }));
    assert.deepEqual(got.plan.build, ['cargo build --release']);
    assert.equal(got.plan.start, undefined);
    const picked = scanProject(app({ 'Cargo.toml': pkg('app', 'default-run = "admin"\n'), 'src/main.rs': MAIN, 'src/bin/seed.rs': MAIN, 'src/bin/admin/main.rs': MAIN }));
    assert.equal(picked.plan.start, './target/release/admin');
  });

  it('a lone src/bin binary runs; autobins = false leaves only the [[bin]] tables', () => {
    assert.equal(scanProject(app({ 'Cargo.toml': pkg('x'), 'src/lib.rs': '', 'src/bin/worker.rs': MAIN })).plan.start, './target/release/worker');
    const declared = scanProject(app({ 'Cargo.toml': pkg('x', 'autobins = false\n\n[[bin]]\nname = "api"\npath = "src/api.rs"\n'), 'src/main.rs': MAIN, 'src/api.rs': MAIN, 'src/bin/other.rs': MAIN }));
    assert.equal(declared.plan.start, './target/release/api');
  });

  it('pins: mise, rust-toolchain.toml (numbered channels only), rust-toolchain, rust-version (also from the workspace), .rust-version', () => {
    const base = { 'Cargo.toml': pkg('x', 'rust-version = "1.70"\n'), 'src/main.rs': MAIN };
    assert.equal(scanProject(app({ ...base, 'rust-toolchain.toml': '[toolchain]\nchannel = "1.79.0"\n', 'mise.toml': '[tools]\nrust = "1.81.0"\n' })).plan.version, '1.81.0');
    assert.equal(scanProject(app({ ...base, 'rust-toolchain.toml': '[toolchain]\nchannel = "stable"\n' })).plan.version, '1.70');
    assert.equal(scanProject(app({ ...base, 'rust-toolchain': '1.76.0\n' })).plan.version, '1.76.0');
    assert.equal(scanProject(app({ ...base, 'rust-toolchain': '[toolchain]\nchannel = "1.77.2"\n' })).plan.version, '1.77.2');
    assert.equal(scanProject(app({ 'Cargo.toml': `${pkg('x', 'rust-version.workspace = true\n')}\n[workspace]\n[workspace.package]\nrust-version = "1.75"\n`, 'src/main.rs': MAIN })).plan.version, '1.75');
    assert.equal(scanProject(app({ 'Cargo.toml': pkg('x'), 'src/main.rs': MAIN, '.rust-version': '1.82\n' })).plan.version, '1.82');
    assert.equal(scanProject(app({ 'Cargo.toml': pkg('x'), 'src/main.rs': MAIN })).plan.version, undefined, 'the edition is not a pin');
  });
});
