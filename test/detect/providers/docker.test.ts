import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { exposedPort } from '../../../src/modules/detect/providers/docker.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { casesOf, expectPlan, tempApp as app } from './support.js';

describe('docker provider', () => {
  const cases = casesOf('docker');
  it('has its corpus case', () => assert.equal(cases.length, 1, cases.join(', ')));
  for (const name of cases) it(`plans ${name}: no install, build or start, the port from EXPOSE`, () => expectPlan(name));

  it('answers the first exposed port', () => {
    assert.equal(exposedPort('FROM x\nEXPOSE 8080/tcp 9090\nEXPOSE 7000\n'), 8080);
    assert.equal(exposedPort('FROM x\nEXPOSE $PORT\nexpose 5000\n'), 5000);
    assert.equal(exposedPort('FROM x\nEXPOSE 99999\n'), null);
    assert.equal(exposedPort('FROM x\n'), null);
    assert.equal(scanProject(app({ Dockerfile: 'FROM x\n' })).port, 3000);
  });

  it('plans a folder with a Dockerfile and nothing a language provider claims; the Procfile and railpack.json leave its plan alone', () => {
    const got = scanProject(app({
      Dockerfile: 'FROM ruby\nEXPOSE 4000\n',
      'index.html': '<h1>hi</h1>',
      Procfile: 'web: ./serve\n',
      'start.sh': 'exec ./serve\n',
      'railpack.json': '{ "deploy": { "startCommand": "./serve", "variables": { "A": "1" } } }',
    }));
    assert.equal(got.runtime, 'docker');
    assert.deepEqual(got.plan, { runtime: 'docker', install: [], build: [] });
    assert.equal(got.port, 4000);
  });

  it('leaves a folder another provider claims to that provider (as Railpack does): the Dockerfile builds only when the project sets config.dockerfile', () => {
    const got = scanProject(app({
      Dockerfile: 'FROM ruby\nEXPOSE 4000\n',
      Gemfile: 'gem "rack"\n',
      'config.ru': 'run ->(e) { [200, {}, []] }\n',
    }));
    assert.equal(got.runtime, 'ruby');
    assert.match(got.plan.start ?? '', /rackup config\.ru/);
  });

  it('leaves a workspace with a Dockerfile at its root to the workspace scan', () => {
    const got = scanProject(app({
      Dockerfile: 'FROM node\n',
      'package.json': JSON.stringify({ name: 'root', private: true, workspaces: ['apps/*'] }),
      'apps/api/package.json': JSON.stringify({ name: 'api', dependencies: { express: '4' }, scripts: { start: 'node server.js' } }),
    }));
    assert.equal(got.rootDirectory, 'apps/api');
    assert.equal(got.runtime, 'node');
  });
});
