import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseProcfile, procfileStart } from '../../../src/modules/detect/providers/procfile.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, tempApp as app } from './support.js';

describe('Procfile', () => {
  const cases = casesOf('procfile');
  it('has its two corpus cases', () => assert.equal(cases.length, 2, cases.join(', ')));
  for (const name of cases) it(`plans ${name}: the Procfile's process is the start command`, () => expectPlan(name));

  it('takes web, else worker, else the first process, as Railpack does (the last line of a type wins)', () => {
    assert.equal(procfileStart('worker: w\nweb: a\nweb: b\n'), 'b');
    assert.equal(procfileStart('release: r\nworker: w\n'), 'w');
    assert.equal(procfileStart('release: r\nclock: c\n'), 'r');
    assert.equal(procfileStart('# only a comment\n\nnot a process line\n'), null);
    assert.deepEqual(parseProcfile('web:   node server.js --opt a:b  \n  # x\nbad line\nq-1_x: run'), [
      { type: 'web', command: 'node server.js --opt a:b' },
      { type: 'q-1_x', command: 'run' },
    ]);
  });

  it('overrides whatever the provider planned, keeping its install and build', () => {
    const got = scanProject(app({ 'composer.json': '{}', Procfile: 'web: php -S 0.0.0.0:${PORT} -t web\n' }));
    assert.equal(got.runtime, 'php');
    assert.deepEqual(got.plan.install, ['composer install --no-dev --optimize-autoloader --no-interaction']);
    assert.equal(got.plan.start, 'php -S 0.0.0.0:${PORT} -t web');
  });

  it('answers a web line that needs a shell as written; the runner refuses it with a clear message', () => {
    const line = 'bundle exec rake db:migrate; bundle exec puma | tee log';
    const got = scanProject(app({ Gemfile: 'gem "puma"\n', Procfile: `web: ${line}\n` }));
    assert.equal(got.plan.start, line);
    assert.throws(() => parseCommand(got.plan.start!), /needs a shell/);
  });

  it('leaves the plan alone without a Procfile or without a process in it', () => {
    assert.equal(scanProject(app({ Gemfile: 'gem "rake"\n', Rakefile: '' })).plan.start, 'bundle exec rake');
    assert.equal(scanProject(app({ Gemfile: 'gem "rake"\n', Rakefile: '', Procfile: 'web:\n' })).plan.start, 'bundle exec rake');
  });
});
