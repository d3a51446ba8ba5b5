import assert from 'node:assert/strict';
import { symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { planBuild } from '../../../src/modules/detect/build-plan.js';
import { parseBerthConfig } from '../../../src/modules/detect/providers/berth-config.js';
import { berthRootDirectory } from '../../../src/modules/detect/providers/index.js';
import { Facts } from '../../../src/modules/detect/facts.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { casesOf, expectPlan, tempApp as app } from './support.js';

const EXPRESS = { 'package.json': JSON.stringify({ name: 'api', scripts: { start: 'node server.js' }, dependencies: { express: '4' } }), 'server.js': '' };

describe('berth.json', () => {
  const cases = casesOf('berth-config');
  it('has its corpus case', () => assert.equal(cases.length, 1, cases.join(', ')));
  for (const name of cases) it(`plans ${name}: its commands replace the detected ones ("" for no step)`, () => expectPlan(name));

  it('wins over railpack.json and the Procfile', () => {
    const got = scanProject(app({ ...EXPRESS, Procfile: 'web: node a.js\n', 'railpack.json': '{ "deploy": { "startCommand": "node b.js" } }', 'berth.json': '{ "startCommand": "node c.js" }' }));
    assert.equal(got.startCommand, 'node c.js');
  });

  it('makes a plan with no start command a static site of its outputDirectory; a server keeps its start', () => {
    const site = scanProject(app({ 'package.json': JSON.stringify({ scripts: { build: 'node build.js' } }), 'berth.json': '{ "outputDirectory": "./out/" }' }));
    assert.deepEqual(site.plan.static, { outputDirectory: 'out', spa: false });
    const server = scanProject(app({ ...EXPRESS, 'berth.json': '{ "outputDirectory": "dist" }' }));
    assert.equal(server.plan.start, 'npm run start');
    assert.equal(server.plan.static, undefined);
    assert.equal(server.outputDirectory, 'dist');
  });

  it('names the file and the field it ignores, and applies the rest', () => {
    const got = scanProject(app({ ...EXPRESS, 'berth.json': '{ "startCommand": 42, "buildCommand": "npm run build", "rootDirectory": "../etc", "outputDirectory": "/srv", "colour": "blue" }' }));
    assert.deepEqual(got.plan.build, ['npm run build']);
    assert.equal(got.plan.start, 'npm run start', 'the detected start stays');
    assert.equal(got.rootDirectory, '');
    const notes = got.plan.notes ?? [];
    assert.ok(notes.some((n) => n === 'berth.json: startCommand must be a string; the field is ignored'), notes.join('\n'));
    assert.ok(notes.some((n) => /^berth\.json: rootDirectory must be a folder below the source root/.test(n)), notes.join('\n'));
    assert.ok(notes.some((n) => /^berth\.json: outputDirectory must be a folder below the app folder/.test(n)), notes.join('\n'));
    assert.ok(notes.some((n) => /^berth\.json: unknown field "colour" is ignored/.test(n)), notes.join('\n'));
  });

  it('a berth.json that is not JSON is ignored with a note naming the file and where it broke; the detected plan applies', () => {
    const got = scanProject(app({ ...EXPRESS, 'berth.json': '{\n  "startCommand": "node x.js",\n  oops\n}' }));
    assert.equal(got.plan.start, 'npm run start');
    assert.match(got.plan.notes?.[0] ?? '', /^berth\.json is not valid JSON \(\w+ at line 3\): it is ignored$/);
    assert.match(parseBerthConfig('[1]', 'berth.json').notes[0]!, /berth\.json must hold a JSON object/);
  });

  it('refuses multi-line, empty-start and over-long commands, field by field', () => {
    const { config, notes } = parseBerthConfig(JSON.stringify({ installCommand: 'a\nb', startCommand: '  ', buildCommand: 'x'.repeat(2049) }), 'berth.json');
    assert.deepEqual(config, {});
    assert.deepEqual(notes, [
      'berth.json: installCommand must be one line; the field is ignored',
      'berth.json: buildCommand is longer than 2048 characters; the field is ignored',
      'berth.json: startCommand must not be empty; the field is ignored',
    ]);
  });

  it("rootDirectory at the source root picks the app folder, whose plan the root's commands override", () => {
    const root = app({
      'berth.json': '{ "rootDirectory": "services/api", "startCommand": "node server.js --port $PORT" }',
      'services/api/package.json': EXPRESS['package.json'],
      'services/api/server.js': '',
      'index.html': '<p>not the app</p>',
    });
    const got = scanProject(root);
    assert.equal(got.rootDirectory, 'services/api');
    assert.equal(got.startCommand, 'node server.js --port $PORT');
    assert.equal(berthRootDirectory(new Facts(root, '', null)), 'services/api');
    // The build plans the folder it is given the same way (src/runtime/build.ts picks it).
    assert.equal(planBuild(root, path.join(root, 'services/api')).start, 'node server.js --port $PORT');
  });

  it("a rootDirectory naming no folder (or a link) leaves the scan at the root; an app folder's own berth.json wins and may not move the root", () => {
    const missing = scanProject(app({ ...EXPRESS, 'berth.json': '{ "rootDirectory": "nowhere" }' }));
    assert.equal(missing.rootDirectory, '');
    assert.ok(missing.plan.notes?.includes('berth.json: rootDirectory nowhere is not a folder of the source; the scan looked at the root'), missing.plan.notes?.join('\n'));
    const outside = app(EXPRESS);
    const linked = app({ 'berth.json': '{ "rootDirectory": "linked/." }', 'index.html': '' });
    symlinkSync(outside, path.join(linked, 'linked'));
    assert.equal(scanProject(linked).rootDirectory, '', 'a link is not a folder of the source');
    const root = app({
      'berth.json': '{ "rootDirectory": "web", "startCommand": "from-root" }',
      'web/package.json': EXPRESS['package.json'],
      'web/berth.json': '{ "startCommand": "from-web", "rootDirectory": "x" }',
    });
    const d = planBuild(root, path.join(root, 'web'));
    assert.equal(d.start, 'from-web');
    assert.ok(d.notes?.some((n) => n === "web/berth.json: rootDirectory is read only from the source root's berth.json; it is ignored here"), d.notes?.join('\n'));
  });

  it("applies the root's berth.json only to the folder it names", () => {
    const root = app({ 'berth.json': '{ "rootDirectory": "a", "startCommand": "for-a" }', 'b/package.json': EXPRESS['package.json'] });
    assert.equal(planBuild(root, path.join(root, 'b')).start, 'npm run start');
  });

  it("leaves a Dockerfile's plan alone and says so", () => {
    const got = scanProject(app({ Dockerfile: 'FROM x\n', 'berth.json': '{ "startCommand": "./serve" }' }));
    assert.equal(got.runtime, 'docker');
    assert.equal(got.plan.start, undefined);
    assert.match(got.plan.notes?.[0] ?? '', /startCommand do not apply to a Dockerfile build/);
  });
});
