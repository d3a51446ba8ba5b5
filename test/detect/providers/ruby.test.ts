import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

const RAILS_APP = 'module Blog\n  class Application < Rails::Application\n  end\nend\n';

describe('ruby provider', () => {
  const cases = casesOf('ruby');
  it('has its four corpus cases', () => assert.equal(cases.length, 4, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does`, () => expectPlan(name));

  it('plans commands the runner accepts (no shell operators, no globs)', () => {
    for (const name of cases) {
      const { plan } = scanProject(path.join(FIXTURES, name));
      for (const cmd of [...plan.install, ...plan.build, ...(plan.start ? [plan.start] : [])]) assert.doesNotThrow(() => parseCommand(cmd), `${name}: ${cmd}`);
    }
  });

  it('runs a Rakefile with bundle exec rake when nothing else serves', () => {
    const got = scanProject(app({ Gemfile: 'gem "rake"\n', Rakefile: 'task :default\n' }));
    assert.equal(got.runtime, 'ruby');
    assert.equal(got.framework, null);
    assert.equal(got.plan.start, 'bundle exec rake');
    assert.equal(got.port, null);
  });

  it('answers no start for a lone Gemfile', () => {
    const got = scanProject(app({ Gemfile: 'gem "nokogiri"\n' }));
    assert.equal(got.plan.start, undefined);
    // Gems go into the release (vendor/bundle, kept in .bundle/config), not the host's gem directory.
    assert.deepEqual(got.plan.install, ['bundle config set --local path vendor/bundle', 'bundle install']);
  });

  it('keeps a Gemfile folder with a package.json ruby, adding the node install and build', () => {
    const got = scanProject(app({
      Gemfile: 'gem "rack"\n',
      'config.ru': 'run ->(e) { [200, {}, []] }\n',
      'package.json': JSON.stringify({ name: 'x', scripts: { build: 'tailwindcss -o out.css' }, packageManager: 'yarn@1.22.19' }),
      'yarn.lock': '# yarn lockfile v1\n',
    }));
    assert.equal(got.runtime, 'ruby');
    assert.deepEqual(got.plan.install.slice(0, 2), ['bundle config set --local path vendor/bundle', 'bundle install']);
    assert.match(got.plan.install[2] ?? '', /^yarn install/);
    assert.deepEqual(got.plan.build, ['yarn run build']);
    assert.equal(got.plan.start, 'bundle exec rackup config.ru -o 0.0.0.0 -p ${PORT:-3000}');
  });

  it('runs a Rails app without bin/rails through a root rails script, and an old Rails app through script/server', () => {
    const rootRails = scanProject(app({ Gemfile: 'gem "rails"\n', rails: '#!/usr/bin/env ruby\n', 'config/application.rb': RAILS_APP }));
    assert.equal(rootRails.plan.start, 'bundle exec rails server -b 0.0.0.0 -p ${PORT:-3000}');
    const old = scanProject(app({ Gemfile: 'gem "rails", "2.3.18"\n', 'config/environment.rb': 'RAILS_GEM_VERSION = "2.3.18"\n', 'script/server': '#!/usr/bin/env ruby\n' }));
    assert.equal(old.framework, 'rails');
    assert.equal(old.plan.start, 'bundle exec ruby script/server -b 0.0.0.0 -p ${PORT:-3000}');
  });

  it('precompiles assets only with an asset pipeline gem (an API-only Rails app has none)', () => {
    const api = scanProject(app({ Gemfile: 'gem "rails"\n', 'config/application.rb': RAILS_APP }));
    assert.deepEqual(api.plan.build, []);
    const sprockets = scanProject(app({ Gemfile: 'gem "rails"\ngem "sprockets-rails"\n', 'config/application.rb': RAILS_APP }));
    assert.deepEqual(sprockets.plan.build, ['bundle exec rake assets:precompile']);
  });

  it('reads the version from .tool-versions before the Gemfile, and from Gemfile.lock last', () => {
    const tv = scanProject(app({ Gemfile: 'ruby "3.1.0"\ngem "rack"\n', '.tool-versions': 'ruby 3.3.0\nnodejs 20.1.0\n' }));
    assert.equal(tv.plan.version, '3.3.0');
    const pessimistic = scanProject(app({ Gemfile: "ruby '~> 3.2.0'\ngem 'rack'\n" }));
    assert.equal(pessimistic.plan.version, '3.2.0');
    const lock = scanProject(app({ Gemfile: 'gem "rack"\n', 'Gemfile.lock': 'GEM\n  specs:\n\nRUBY VERSION\n   ruby 3.1.4p223\n\nBUNDLED WITH\n   2.4.1\n' }));
    assert.equal(lock.plan.version, '3.1.4');
    const none = scanProject(app({ Gemfile: 'gem "rack"\n' }));
    assert.equal(none.plan.version, undefined);
  });

  it('uses rackup for a Sinatra app that has a config.ru', () => {
    const got = scanProject(app({ Gemfile: 'gem "sinatra"\n', 'config.ru': 'require "./app"\nrun Sinatra::Application\n', 'app.rb': 'require "sinatra"\n' }));
    assert.equal(got.framework, 'sinatra');
    assert.equal(got.plan.start, 'bundle exec rackup config.ru -o 0.0.0.0 -p ${PORT:-3000}');
  });
});
