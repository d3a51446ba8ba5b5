import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { casesOf, expectPlan } from './support.js';

/** Scans a small tree written into a temp folder. */
function scanTree(tree: Record<string, string>) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-static-'));
  try {
    for (const [rel, content] of Object.entries(tree)) {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      writeFileSync(path.join(dir, rel), content);
    }
    return scanProject(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('static provider: the corpus', () => {
  const cases = casesOf('static');
  it('has every static case (a lost fixture fails)', () => assert.equal(cases.length, 3));
  for (const name of cases) it(`plans ${name} as Railpack does`, () => expectPlan(name));
});

describe('static provider: the root folder (Staticfile root, then public, then index.html)', () => {
  const planned = (tree: Record<string, string>) => scanTree(tree).plan;

  it('a Staticfile root wins over public and index.html', () => {
    assert.deepEqual(planned({ Staticfile: 'root: site/\n', 'site/index.html': '', 'public/x.css': '', 'index.html': '' }), { runtime: 'static', install: [], build: [], static: { outputDirectory: 'site', spa: false } });
  });

  it('a public folder wins over an index.html beside it (as Railpack)', () => {
    assert.equal(planned({ 'public/index.html': '', 'index.html': '' }).static?.outputDirectory, 'public');
  });

  it('an index.html alone serves the folder itself', () => {
    assert.equal(planned({ 'index.html': '', 'about.html': '' }).static?.outputDirectory, '.');
  });

  it('a Staticfile without root falls back to public / index.html; with nothing to serve, no provider claims the folder', () => {
    assert.equal(planned({ Staticfile: 'index_fallback: true\n', 'index.html': '' }).static?.outputDirectory, '.');
    assert.equal(scanTree({ Staticfile: '# nothing\n', 'notes.txt': '' }).runtime, 'unknown');
  });

  it('index_fallback: true makes it a single-page app; quotes and comments are read', () => {
    assert.deepEqual(planned({ Staticfile: "root: 'dist' # built\nindex_fallback: true\n", 'dist/index.html': '' }).static, { outputDirectory: 'dist', spa: true });
  });

  it('a root that leaves the folder is ignored', () => {
    assert.equal(planned({ Staticfile: 'root: ../etc\n', 'index.html': '' }).static?.outputDirectory, '.');
  });

  it('a static site answers no start, no port and no programs', () => {
    const got = scanTree({ 'index.html': '' });
    assert.equal(got.startCommand, null);
    assert.equal(got.port, null);
    assert.equal(got.packageManager, null);
  });
});
