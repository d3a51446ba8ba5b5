// @store-independent: the CLI reaches the store only through the HTTP API, whose own suites run on both stores.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listFiles } from '../../src/cli/pack.js';
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

describe('berth deploy [DIR]: packing and upload', () => {
  it('packs the folder honouring .gitignore and .berthignore, uploads with progress bars, scans, ensures and links the folder', async () => {
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

    // The test server runs no jobs worker: the deployment stays queued, which --no-wait does not mind.
    const res = await cli(['deploy', 'my-site', '--json', '--no-wait']);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stderr, /packing +\[#+\] 100% 10\/10 files/);
    assert.match(res.stderr, /uploading \[#+\] 100%/);
    assert.match(res.stderr, /skipped leak\.txt: symlink leading outside the folder/);
    const { project: p, deployment, url } = JSON.parse(res.stdout);
    assert.equal(p.name, 'my-site');
    assert.equal(p.source.type, 'upload');
    assert.equal(p.config.framework, 'vite');
    assert.equal(p.config.outputDirectory, 'dist');
    assert.equal(p.config.buildCommand, 'npm run build');
    assert.equal(deployment.projectId, p.id);
    assert.equal(deployment.status, 'queued');
    assert.equal(url, null);
    const link = JSON.parse(readFileSync(path.join(app, '.berth', 'project.json'), 'utf8'));
    assert.deepEqual(link, { projectId: p.id, orgId: user.orgId, server: server.url });
    assert.match(readFileSync(path.join(app, '.gitignore'), 'utf8'), /\n\.berth\n$/);

    const current = path.join(server.dataDir, 'uploads', p.id, 'current');
    const first = [
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
    ];
    assert.deepEqual(tree(current), first);

    // Deploying again from the linked folder updates the same project in place (the link itself is not packed).
    writeFileSync(path.join(app, 'src/extra.jsx'), 'export {}\n');
    const again = await cli(['deploy', app, '--no-wait']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, new RegExp(`updated project my-site \\(${p.id}\\)`));
    assert.match(again.stdout, /^deployment dpl_\S+ queued\n$/);
    assert.deepEqual(tree(current), [...first, 'src/extra.jsx'].sort());
  });

  it('fails clearly when the folder is missing (usage, 2) or when not logged in (1)', async () => {
    const missing = await cli(['deploy', path.join(work, 'nope')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /error: .*nope is not a folder/);
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
});

describe('which files `berth deploy` packs', () => {
  function folder(files: Record<string, string>): string {
    const root = tempDir('berth-pack-');
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), text);
    }
    return root;
  }

  it('applies gitignore patterns: anchored, globbed, `**`, folder-only, negation; case-sensitive', () => {
    const root = folder({
      '.gitignore': ['*.log', '!keep.log', '/build', 'docs/*.md', '**/tmp', 'a/**/z', 'cache/', 'Secret.txt'].join('\n') + '\n',
      'x.log': '',
      'deep/x.log': '',
      'keep.log': '',
      'build/out.js': '',
      'src/build/in.js': '',
      'docs/a.md': '',
      'docs/sub/a.md': '',
      'tmp/t': '',
      'x/y/tmp/t': '',
      'a/z': '',
      'a/b/c/z': '',
      'cache/c': '',
      'lib/cache': '',
      'secret.txt': '',
      'Secret.txt': '',
      'src/index.js': '',
    });
    try {
      assert.deepEqual(listFiles(root).files.sort(), ['.gitignore', 'docs/sub/a.md', 'keep.log', 'lib/cache', 'secret.txt', 'src/build/in.js', 'src/index.js']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('local-only env files (.env.local, .env.*.local) stay home unless an ignore file brings them back', () => {
    const root = folder({ '.env': 'A=1', '.env.local': 'S=secret', '.env.production.local': 'S=secret', 'web/.env.local': 'S=secret', 'index.js': '' });
    try {
      assert.deepEqual(listFiles(root).files.sort(), ['.env', 'index.js']);
      writeFileSync(path.join(root, '.berthignore'), '!.env.production.local\n');
      assert.deepEqual(listFiles(root).files.sort(), ['.berthignore', '.env', '.env.production.local', 'index.js']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a nested .gitignore applies to its folder and wins over its parents; .berthignore applies last; .git, node_modules and the link are always left out', () => {
    const root = folder({
      '.gitignore': '*.log\ndist/\n',
      '.berthignore': '!dist/\nextra.txt\n!node_modules/\n',
      'app/.gitignore': '!keep.log\nlocal.txt\n',
      'app/keep.log': '',
      'app/other.log': '',
      'app/local.txt': '',
      'local.txt': '',
      'extra.txt': '',
      'dist/index.html': '',
      'node_modules/x/index.js': '',
      'app/node_modules/y/index.js': '',
      '.git/HEAD': '',
      '.berth/project.json': '{}',
      'app/.berth/kept': '',
    });
    try {
      const list = listFiles(root);
      assert.deepEqual(list.files.sort(), ['.berthignore', '.gitignore', 'app/.berth/kept', 'app/.gitignore', 'app/keep.log', 'dist/index.html', 'local.txt']);
      assert.equal(list.bytes, ['.berthignore', '.gitignore', 'app/.gitignore'].reduce((n, f) => n + readFileSync(path.join(root, f)).length, 0));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
