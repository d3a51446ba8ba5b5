import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { detectFolder } from '../../../src/modules/detect/detect.js';
import { Facts } from '../../../src/modules/detect/facts.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

describe('php provider', () => {
  const cases = casesOf('php');
  it('has its four corpus cases', () => assert.equal(cases.length, 4, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does (served by php -S)`, () => expectPlan(name));

  it('plans commands the runner accepts (no shell operators, no globs)', () => {
    for (const name of cases) {
      const { plan } = scanProject(path.join(FIXTURES, name));
      for (const cmd of [...plan.install, ...plan.build, ...(plan.start ? [plan.start] : [])]) assert.doesNotThrow(() => parseCommand(cmd), `${name}: ${cmd}`);
    }
  });

  it('needs composer only when there is a composer.json', () => {
    assert.deepEqual(detectFolder(new Facts(app({ 'index.php': '<?php' }), '', null)).programs, ['php']);
    assert.deepEqual(detectFolder(new Facts(app({ 'index.php': '<?php', 'composer.json': '{}' }), '', null)).programs, ['php', 'composer']);
  });

  it('serves the app folder when public/ only holds assets, and public/ when it holds the front controller', () => {
    const assets = scanProject(app({ 'index.php': '<?php', 'public/logo.svg': '<svg/>' }));
    assert.equal(assets.plan.start, 'php -S 0.0.0.0:${PORT:-8080} -t .');
    const front = scanProject(app({ 'public/index.php': '<?php' }));
    assert.equal(front.runtime, 'php', 'a lone public/index.php is a PHP app');
    assert.equal(front.plan.start, 'php -S 0.0.0.0:${PORT:-8080} -t public');
  });

  it('reads the first version of require.php, and none without it', () => {
    const v = (php?: string) => scanProject(app({ 'composer.json': JSON.stringify({ require: php ? { php } : {} }) })).plan.version;
    assert.equal(v('^8.2'), '8.2');
    assert.equal(v('>=8.1 <9.0'), '8.1');
    assert.equal(v('~8.3.0 || ^8.4'), '8.3.0');
    assert.equal(v('8.2.*'), '8.2');
    assert.equal(v(), undefined);
  });

  it('stays php with a package.json (composer.json wins over node), running the node build only when there is a build script', () => {
    const got = scanProject(app({ 'composer.json': '{"require":{"symfony/framework-bundle":"^7.0"}}', 'public/index.php': '<?php', 'package.json': '{"name":"x","devDependencies":{"sass":"^1.0.0"}}' }));
    assert.equal(got.runtime, 'php');
    assert.equal(got.framework, 'symfony');
    assert.equal(got.plan.install[0], 'composer install --no-dev --optimize-autoloader --no-interaction');
    assert.match(got.plan.install[1] ?? '', /^npm (ci|install)$/);
    assert.deepEqual(got.plan.build, []);
  });

  it('builds the Laravel caches, none of which needs a database (no migrate)', () => {
    const got = scanProject(app({ artisan: '<?php', 'composer.json': '{}' }));
    assert.deepEqual(got.plan.build, ['php artisan config:cache', 'php artisan event:cache', 'php artisan route:cache', 'php artisan view:cache']);
    assert.ok(![...got.plan.build, got.plan.start ?? ''].some((c) => /migrate|db:/.test(c)));
    assert.equal(got.plan.start, 'php -S 0.0.0.0:${PORT:-8080} -t public');
  });
});
