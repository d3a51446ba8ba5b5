import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { planBuild } from '../../../src/modules/detect/build-plan.js';
import { goWorkUses } from '../../../src/modules/detect/providers/go.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

const MOD = 'module example.com/x\n\ngo 1.22\n';
const MAIN = 'package main\n\nfunc main() {}\n';
const BUILD = 'go build -ldflags="-w -s" -o out';

describe('go provider', () => {
  const cases = casesOf('go');
  it('has its five corpus cases', () => assert.equal(cases.length, 5, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does`, () => expectPlan(name));

  it('plans commands the runner accepts, the linker flags as one argument', () => {
    for (const name of cases) {
      const { plan } = scanProject(path.join(FIXTURES, name));
      for (const cmd of [...plan.install, ...plan.build, ...(plan.start ? [plan.start] : [])]) assert.doesNotThrow(() => parseCommand(cmd), `${name}: ${cmd}`);
    }
    assert.deepEqual(parseCommand(BUILD)[0]!.argv, ['go', 'build', '-ldflags=-w -s', '-o', 'out']);
  });

  it('needs go on the host and answers port 8080', () => {
    const d = planBuild(path.join(FIXTURES, 'go'), path.join(FIXTURES, 'go'));
    assert.deepEqual(d.programs, ['go']);
    assert.equal(d.port, 8080);
    assert.equal(d.tools, undefined);
  });

  it('root .go files win over cmd/ folders', () => {
    const got = scanProject(app({ 'go.mod': MOD, 'main.go': MAIN, 'cmd/tool/main.go': MAIN }));
    assert.deepEqual(got.plan.build, [BUILD]);
  });

  it('of several cmd/ folders, builds the first alphabetically that holds Go files', () => {
    const got = scanProject(app({ 'go.mod': MOD, 'cmd/admin/README.md': '# docs\n', 'cmd/server/main.go': MAIN, 'cmd/worker/main.go': MAIN }));
    assert.deepEqual(got.plan.build, [`${BUILD} ./cmd/server`]);
    const none = scanProject(app({ 'go.mod': MOD, 'cmd/b/x.txt': '', 'cmd/a/y.txt': '' }));
    assert.deepEqual(none.plan.build, [`${BUILD} ./cmd/a`], 'with no Go files anywhere, the first, as Railpack');
  });

  it('a module with no root package and no cmd/ builds the module root', () => {
    const got = scanProject(app({ 'go.mod': MOD, 'internal/x/x.go': 'package x\n' }));
    assert.deepEqual(got.plan, { runtime: 'go', version: '1.22', install: ['go mod download'], build: [BUILD], start: './out' });
  });

  it('a workspace with no module holding a main.go builds nothing and has no start', () => {
    const got = scanProject(app({ 'go.work': 'go 1.23\n\nuse ./lib\n', 'lib/go.mod': MOD, 'lib/lib.go': 'package lib\n' }));
    assert.equal(got.runtime, 'go');
    assert.deepEqual(got.plan, { runtime: 'go', version: '1.23', install: ['go mod download'], build: [] });
    assert.equal(got.port, null);
  });

  it('reads the modules a go.work uses, in both forms, ignoring comments and parent folders', () => {
    assert.deepEqual(goWorkUses('go 1.22\n\nuse ./api\nuse (\n\t./shared // the lib\n\t"./tools/"\n\t../outside\n\t.\n)\n'), ['shared', 'tools', 'api']);
  });

  it('pins mise over .go-version over go.mod; no go line is no pin; the toolchain line is not one', () => {
    assert.equal(scanProject(app({ 'go.mod': MOD, 'main.go': MAIN, '.go-version': '1.23.4\n' })).plan.version, '1.23.4');
    assert.equal(scanProject(app({ 'go.mod': MOD, 'main.go': MAIN, '.tool-versions': 'golang 1.21.0\n', '.go-version': '1.23.4\n' })).plan.version, '1.21.0');
    assert.equal(scanProject(app({ 'go.mod': 'module x\n\ntoolchain go1.23.0\n', 'main.go': MAIN })).plan.version, undefined);
  });

  it('a go.mod that is not a module file still plans a build', () => {
    const got = scanProject(app({ 'go.mod': 'this is not go\n', 'main.go': MAIN }));
    assert.deepEqual(got.plan, { runtime: 'go', install: ['go mod download'], build: [BUILD], start: './out' });
  });
});
