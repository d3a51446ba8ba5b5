import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, it } from 'node:test';
import { listFiles } from '../../src/cli/pack.js';

/**
 * `berth deploy` (src/cli/pack.ts, walking the disk) and the dashboard's folder upload
 * (web/src/pages/projects/new-pack.ts, given a picked folder's file list) leave out the same files:
 * both apply src/lib/pack-rules.ts.
 */

interface PackPlan {
  files: { path: string }[];
  skipped: string[];
}
type PlanPack = (picked: { path: string; file: File }[]) => Promise<PackPlan>;

// The dashboard's module, loaded at run time (tsx compiles it; the web tsconfig typechecks it).
const newPack = pathToFileURL(path.resolve(import.meta.dirname, '../../web/src/pages/projects/new-pack.ts')).href;
const { planPack } = (await import(newPack)) as { planPack: PlanPack };

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function folder(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'berth-pack-rules-'));
  dirs.push(root);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return root;
}

/** Every file under `root`, as a browser hands a picked folder over (nothing left out yet). */
function picked(root: string, rel = ''): { path: string; file: File }[] {
  const out: { path: string; file: File }[] = [];
  for (const e of readdirSync(path.join(root, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...picked(root, r));
    else out.push({ path: r, file: new File([readFileSync(path.join(root, r))], e.name) });
  }
  return out;
}

async function bothSides(root: string): Promise<{ cli: string[]; dashboard: string[] }> {
  const cli = listFiles(root).files.sort();
  const dashboard = (await planPack(picked(root))).files.map((f) => f.path).sort();
  return { cli, dashboard };
}

describe('the folder pack rules, shared by the CLI and the dashboard', () => {
  it('give the same files for the same folder: fixed leave-outs, nested .gitignore files, .berthignore last, local env files', async () => {
    const root = folder({
      '.gitignore': 'dist/\n*.log\n!keep.log\nsecret.txt\n/rootonly.txt\nbuild/\n',
      '.berthignore': '!.env.local\ncoverage/\n',
      '.env': 'A=1\n',
      '.env.local': 'B=2\n',
      '.env.production.local': 'C=3\n',
      'package.json': '{}\n',
      'rootonly.txt': 'x\n',
      'secret.txt': 'x\n',
      'Secret.txt': 'case matters\n',
      'app.log': 'x\n',
      'keep.log': 'x\n',
      '.DS_Store': 'x',
      '.git/HEAD': 'ref\n',
      '.hg/store': 'x',
      '.svn/entries': 'x',
      '.berth/project.json': '{}\n',
      'node_modules/a/index.js': 'x\n',
      'node_modules/.gitignore': '!*\n',
      'dist/out.js': 'x\n',
      'coverage/lcov.info': 'x\n',
      'src/index.js': 'x\n',
      'src/app.log': 'x\n',
      'src/.gitignore': 'generated/\n!secret.txt\n',
      'src/secret.txt': 'brought back by the deeper .gitignore\n',
      'src/generated/.gitignore': '!x.js\n',
      'src/generated/x.js': 'x\n',
      'src/.DS_Store': 'x',
      'src/.berth/kept.txt': 'only the root .berth is the link\n',
      'src/node_modules/b.js': 'x\n',
      'sub/rootonly.txt': 'x\n',
      'lib/.gitignore': '!build/\n',
      'lib/build/out.js': 'the root ignores build/, this folder brings it back\n',
      'build/out.js': 'x\n',
    });
    const { cli, dashboard } = await bothSides(root);
    assert.deepEqual(dashboard, cli);
    assert.deepEqual(cli, [
      '.berthignore',
      '.env',
      '.env.local',
      '.gitignore',
      'Secret.txt',
      'keep.log',
      'lib/.gitignore',
      'lib/build/out.js',
      'package.json',
      'src/.berth/kept.txt',
      'src/.gitignore',
      'src/index.js',
      'src/secret.txt',
      'sub/rootonly.txt',
    ]);
  });

  it('give the same files when a folder has no ignore files at all (only the fixed rules and the local env files)', async () => {
    const root = folder({ 'index.html': '<p>hi</p>\n', '.env.development.local': 'x\n', 'assets/app.css': 'p{}\n', 'assets/node_modules/x.js': 'x\n' });
    const { cli, dashboard } = await bothSides(root);
    assert.deepEqual(dashboard, cli);
    assert.deepEqual(cli, ['assets/app.css', 'index.html']);
  });

  it('give the same files when .berthignore leaves out what a .gitignore keeps, and a negation cannot reach into an ignored folder', async () => {
    const root = folder({
      '.gitignore': 'tmp/\n!tmp/keep.txt\n',
      '.berthignore': 'docs/\n*.md\n!README.md\n',
      'README.md': '# app\n',
      'CHANGES.md': 'x\n',
      'docs/guide.txt': 'x\n',
      'tmp/keep.txt': 'x\n',
      'main.go': 'package main\n',
    });
    const { cli, dashboard } = await bothSides(root);
    assert.deepEqual(dashboard, cli);
    assert.deepEqual(cli, ['.berthignore', '.gitignore', 'README.md', 'main.go']);
  });
});
