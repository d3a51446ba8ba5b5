import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { compileIgnoreLine, isIgnored } from '../../src/cli/deploy.js';
import { runCli } from '../support/cli.js';
import { createUser, type TestUser } from '../support/factories.js';
import { startTestServer, tempDir, type TestServer } from '../support/harness.js';

const FIX = path.resolve(import.meta.dirname, '../fixtures/detect');

let server: TestServer;
let user: TestUser;
let work: string;
let configHome: string;

function cliEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: configHome };
  delete env.BERTH_SERVER;
  delete env.BERTH_TOKEN;
  return env;
}

/** `berth <args>` run from the work folder with a fresh CLI config and no server or token from the environment. */
const cli = (args: string[]) => runCli(args, { cwd: work, baseEnv: cliEnv() });

function tree(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const n of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${n.name}` : n.name;
    if (n.isDirectory()) out.push(...tree(dir, r));
    else out.push(r);
  }
  return out.sort();
}

before(async () => {
  server = await startTestServer();
  user = await createUser(server);
  work = tempDir('berth-cli-deploy-');
  configHome = path.join(work, 'config');
  mkdirSync(path.join(configHome, 'berth'), { recursive: true });
  writeFileSync(path.join(configHome, 'berth', 'config.json'), JSON.stringify({ server: server.url, token: user.token }));
});
after(async () => {
  await server.close();
  rmSync(work, { recursive: true, force: true });
});

describe('berth deploy [DIR]', () => {
  it('packs the folder honouring .gitignore and .berthignore, uploads with a progress bar, scans, ensures and prints the project', async () => {
    const app = path.join(work, 'my-site');
    cpSync(path.join(FIX, 'vite-react'), app, { recursive: true });
    mkdirSync(path.join(app, 'src/components'), { recursive: true });
    writeFileSync(path.join(app, 'src/main.jsx'), 'console.log(1)\n');
    writeFileSync(path.join(app, 'src/components/Button.jsx'), 'export {}\n');
    writeFileSync(path.join(app, 'src/components/debug.log'), 'noise\n');
    writeFileSync(path.join(app, 'src/components/.gitignore'), 'Generated.jsx\n');
    writeFileSync(path.join(app, 'src/components/Generated.jsx'), 'generated\n');
    mkdirSync(path.join(app, 'dist'), { recursive: true });
    writeFileSync(path.join(app, 'dist/index.html'), 'built\n');
    mkdirSync(path.join(app, 'node_modules/react'), { recursive: true });
    writeFileSync(path.join(app, 'node_modules/react/index.js'), 'module.exports={}\n');
    writeFileSync(path.join(app, '.env'), 'SECRET=1\n');
    writeFileSync(path.join(app, '.env.example'), 'SECRET=\n');
    writeFileSync(path.join(app, '.gitignore'), '# build output\ndist/\n*.log\n.env*\n!.env.example\n');
    writeFileSync(path.join(app, '.berthignore'), 'notes/\n/secret.txt\n');
    mkdirSync(path.join(app, 'notes'));
    writeFileSync(path.join(app, 'notes/todo.md'), 'x\n');
    writeFileSync(path.join(app, 'secret.txt'), 'x\n');
    const outsideFile = path.join(work, 'outside.txt');
    writeFileSync(outsideFile, 'outside\n');
    symlinkSync(outsideFile, path.join(app, 'leak.txt'));
    symlinkSync('src/main.jsx', path.join(app, 'main-link.jsx'));

    const res = await cli(['deploy', 'my-site', '--json']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stderr, /uploading \[#+\] 100%/);
    assert.match(res.stderr, /skipped leak\.txt: symlink leading outside the folder/);
    const p = JSON.parse(res.stdout);
    assert.equal(p.name, 'my-site');
    assert.equal(p.source.type, 'upload');
    assert.equal(p.config.framework, 'vite');
    assert.equal(p.config.outputDirectory, 'dist');
    assert.equal(p.config.buildCommand, 'npm run build');

    const current = path.join(server.dataDir, 'uploads', p.id, 'current');
    assert.deepEqual(tree(current), [
      '.berthignore',
      '.env.example',
      '.gitignore',
      'index.html',
      'main-link.jsx',
      'package-lock.json',
      'package.json',
      'src/components/.gitignore',
      'src/components/Button.jsx',
      'src/main.jsx',
    ]);

    // Deploying again with --project updates the same project in place.
    writeFileSync(path.join(app, 'src/extra.jsx'), 'export {}\n');
    const again = await cli(['deploy', app, '--project', p.id]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, new RegExp(`project my-site \\(${p.id}\\)`));
    assert.ok(existsSync(path.join(current, 'src/extra.jsx')));
  });

  it('fails clearly when not logged in or the folder is missing', async () => {
    const missing = await cli(['deploy', path.join(work, 'nope')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /error:/);
    const saved = configHome;
    configHome = path.join(work, 'empty-config');
    try {
      const res = await cli(['deploy', '.']);
      assert.equal(res.code, 1);
      assert.match(res.stderr, /not logged in/);
    } finally {
      configHome = saved;
    }
  });

  it('the ignore matcher follows gitignore rules', () => {
    const rules = ['*.log', '/build', 'docs/*.md', '**/tmp', 'a/**/z', '!keep.log', 'cache/'].map(compileIgnoreLine).filter((r) => !!r);
    const scope = [{ base: '', rules: rules as NonNullable<ReturnType<typeof compileIgnoreLine>>[] }];
    const cases: [string, boolean, boolean][] = [
      ['x.log', false, true],
      ['deep/x.log', false, true],
      ['keep.log', false, false],
      ['build', true, true],
      ['src/build', true, false],
      ['docs/a.md', false, true],
      ['docs/sub/a.md', false, false],
      ['tmp', true, true],
      ['x/y/tmp', true, true],
      ['a/z', false, true],
      ['a/b/c/z', false, true],
      ['cache', true, true],
      ['cache', false, false],
      ['src/index.js', false, false],
    ];
    for (const [p, dir, want] of cases) assert.equal(isIgnored(scope, p, dir), want, p);
  });
});
