import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { safeEntryPath } from '../../src/lib/tar/entry-path.js';
import { ExtractError } from '../../src/lib/tar/extract-error.js';
import { extractSafely } from '../../src/lib/tar/extractor.js';
import { manyEmptyEntries, tgz, zeroMember, type TarEntry } from './targen.js';

let base: string;
let sentinel: string;
let n = 0;

/** Every path under `dir` (relative), with its kind; symlinks are reported as such. */
function walk(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(dir, rel))) {
    const r = rel ? `${rel}/${name}` : name;
    const st = lstatSync(path.join(dir, r));
    if (st.isSymbolicLink()) out.push(`${r}@`);
    else if (st.isDirectory()) out.push(`${r}/`, ...walk(dir, r));
    else if (st.isFile()) out.push(r);
    else out.push(`${r}?`);
  }
  return out.sort();
}

async function* once(buf: Buffer): AsyncGenerator<Buffer> {
  // Several chunks, as from a socket.
  for (let i = 0; i < buf.length; i += 16 * 1024) yield buf.subarray(i, i + 16 * 1024);
}

async function extract(src: Buffer | AsyncIterable<Buffer>) {
  const root = path.join(base, `root-${++n}`, 'x');
  mkdirSync(root, { recursive: true });
  try {
    const out = await extractSafely(Buffer.isBuffer(src) ? once(src) : src, root);
    return { ok: true as const, out, root };
  } catch (e) {
    return { ok: false as const, error: e as ExtractError, root };
  }
}

function assertSentinelUntouched() {
  assert.deepEqual(walk(sentinel), ['secret']);
  assert.equal(readFileSync(path.join(sentinel, 'secret'), 'utf8'), 'original');
  // Nothing was written beside the roots either.
  for (const name of readdirSync(base)) assert.ok(name === 'sentinel' || name.startsWith('root-'), `unexpected ${name} in the test dir`);
}

async function refused(entries: TarEntry[] | Buffer, kind?: string) {
  const r = await extract(Array.isArray(entries) ? tgz(entries) : entries);
  assert.equal(r.ok, false, 'the archive must be refused');
  if (!r.ok) {
    assert.ok(r.error instanceof ExtractError, `an ExtractError, got ${r.error}`);
    if (kind) assert.equal(r.error.kind, kind, r.error.message);
  }
  assertSentinelUntouched();
  // Whatever was written so far is only files and directories (the caller then removes the root).
  for (const p of walk(r.root)) assert.ok(!p.endsWith('@') && !p.endsWith('?'), `only files and dirs, got ${p}`);
  return r;
}

before(() => {
  base = mkdtempSync(path.join(os.tmpdir(), 'berth-tar-'));
  sentinel = path.join(base, 'sentinel');
  mkdirSync(sentinel);
  writeFileSync(path.join(sentinel, 'secret'), 'original');
});
after(() => rmSync(base, { recursive: true, force: true }));

describe('safe extraction', () => {
  it('extracts regular files and directories, with modes reduced to 0644/0755', async () => {
    const r = await extract(
      tgz([
        { path: 'app/', type: 'Directory' },
        { path: 'app/package.json', data: '{"name":"x"}' },
        { path: 'app/bin/run', data: '#!/bin/sh\n', mode: 0o4755 },
        { path: './app/deep/a/b.txt', data: 'b' },
        { path: 'big.bin', data: Buffer.alloc(600 * 1024, 7) },
      ]),
    );
    assert.ok(r.ok, r.ok ? '' : r.error.message);
    assert.deepEqual(walk(r.root), ['app/', 'app/bin/', 'app/bin/run', 'app/deep/', 'app/deep/a/', 'app/deep/a/b.txt', 'app/package.json', 'big.bin']);
    assert.equal(statSync(path.join(r.root, 'app/bin/run')).mode & 0o7000, 0, 'no setuid bit');
    assert.ok(statSync(path.join(r.root, 'app/bin/run')).mode & 0o100, 'executable kept');
    assert.equal(statSync(path.join(r.root, 'big.bin')).size, 600 * 1024);
    assert.equal(r.out.files, 4);
  });

  it('refuses ../ paths', async () => {
    await refused([{ path: '../escape.txt', data: 'x' }], 'hostile');
    await refused([{ path: 'a/../../sentinel/secret', data: 'pwned' }], 'hostile');
  });

  it('refuses absolute paths, repeated slashes included (CVE-2021-32804)', async () => {
    await refused([{ path: path.join(sentinel, 'abs'), data: 'x', pax: true }], 'hostile');
    await refused([{ path: `////${sentinel.slice(1)}/abs`, data: 'x', pax: true }], 'hostile');
  });

  it('refuses drive-relative paths (CVE-2021-37713)', async () => {
    await refused([{ path: 'c:../escape', data: 'x' }], 'hostile');
    await refused([{ path: 'C:\\escape', data: 'x' }], 'hostile');
  });

  it('never writes through a symlink: a link leaving the root is refused, one inside is skipped', async () => {
    await refused([
      { path: 'link', type: 'SymbolicLink', linkpath: sentinel },
      { path: 'link/pwn', data: 'pwned' },
    ]);
    await refused([
      { path: 'link', type: 'SymbolicLink', linkpath: '../../sentinel' },
      { path: 'link/pwn', data: 'pwned' },
    ]);
    const r = await extract(
      tgz([
        { path: 'inner', type: 'SymbolicLink', linkpath: '.' },
        { path: 'inner/file', data: 'stays inside' },
      ]),
    );
    assert.ok(r.ok);
    assert.deepEqual(walk(r.root), ['inner/', 'inner/file']);
    assert.deepEqual(r.out.skipped, [{ path: 'inner', type: 'symlink' }]);
    assertSentinelUntouched();
  });

  it('refuses a hardlink to a file outside', async () => {
    await refused([{ path: 'hl', type: 'Link', linkpath: path.join(sentinel, 'secret') }, { path: 'hl', data: 'pwned' }], 'hostile');
    await refused([{ path: 'hl', type: 'Link', linkpath: '../sentinel/secret' }, { path: 'hl', data: 'pwned' }], 'hostile');
  });

  it('refuses device and FIFO entries', async () => {
    await refused([{ path: 'null', type: 'CharacterDevice' }], 'hostile');
    await refused([{ path: 'disk', type: 'BlockDevice' }], 'hostile');
    await refused([{ path: 'pipe', type: 'FIFO' }], 'hostile');
  });

  it('refuses a gzip bomb quickly', async () => {
    const t0 = Date.now();
    // 64 concatenated gzip members of 32 MiB of zeros: 2 GiB expanded from ~2 MB.
    const member = zeroMember(32 * 1024 * 1024);
    async function* bomb() {
      yield tgz([{ path: 'a.txt', data: 'a' }]).subarray(0); // a valid archive first
      for (let i = 0; i < 64; i++) yield member;
    }
    await refused(await collect(bomb()), 'limit');
    // A header announcing more than 1 GiB is refused before a byte is written.
    await refused([{ path: 'huge.bin', size: 2 * 1024 ** 3 }], 'limit');
    assert.ok(Date.now() - t0 < 15000, `took ${Date.now() - t0} ms`);
  });

  it('refuses a million empty entries at 100 000, quickly', async () => {
    const t0 = Date.now();
    const r = await extract(manyEmptyEntries(1_000_000));
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.equal(r.error.kind, 'limit');
      assert.match(r.error.message, /100000 entries/);
    }
    assert.ok(Date.now() - t0 < 20000, `took ${Date.now() - t0} ms`);
    assertSentinelUntouched();
  });

  it('refuses nesting deeper than 64 folders (CVE-2024-28863)', async () => {
    await refused([{ path: 'a/'.repeat(2000) + 'x', data: 'x', pax: true }], 'limit');
    const ok = await extract(tgz([{ path: 'a/'.repeat(63) + 'x', data: 'x', pax: true }]));
    assert.ok(ok.ok);
  });

  it('a corrupt gzip or tar stream is refused', async () => {
    await refused(Buffer.from('this is not gzip at all'), 'invalid');
    const good = tgz([{ path: 'a.txt', data: 'hello' }]);
    await refused(good.subarray(0, good.length - 10), 'invalid');
    const bad = Buffer.from(tgz([{ path: 'a.txt', data: 'hello' }]));
    bad[30] ^= 0xff;
    await refused(bad, 'invalid');
    const { gzipSync } = await import('node:zlib');
    await refused(gzipSync(Buffer.alloc(2048, 0x41)), 'invalid');
    await refused(Buffer.alloc(0), 'invalid');
  });

  describe('node-tar advisories: zero writes outside the root', () => {
    it('CVE-2021-32803: a directory replaced by a symlink, then written through', async () => {
      await refused([
        { path: 'x', type: 'Directory' },
        { path: 'x', type: 'SymbolicLink', linkpath: sentinel },
        { path: 'x/pwn', data: 'pwned' },
      ]);
      await refused([
        { path: 'x/', type: 'Directory' },
        { path: 'x', type: 'SymbolicLink', linkpath: '../../../sentinel' },
        { path: 'x/pwn', data: 'pwned' },
      ]);
    });

    it('CVE-2021-37701: backslash and trailing-slash link aliases', async () => {
      await refused([
        { path: 'a\\x', type: 'Directory' },
        { path: 'a\\x', type: 'SymbolicLink', linkpath: sentinel },
        { path: 'a\\x/pwn', data: 'pwned' },
      ]);
      await refused([
        { path: 'y/', type: 'Directory' },
        { path: 'y/', type: 'SymbolicLink', linkpath: '../../sentinel' },
        { path: 'y/pwn', data: 'pwned' },
      ]);
    });

    it('CVE-2021-37712: unicode aliases of a symlinked folder', async () => {
      const r = await extract(
        tgz([
          { path: '\u{FB00}', type: 'Directory' },
          { path: 'ff', type: 'SymbolicLink', linkpath: '.' },
          { path: '\u{FB00}/pwn', data: 'inside' },
          { path: 'ff/pwn', data: 'inside' },
        ]),
      );
      assert.ok(r.ok);
      assert.ok(walk(r.root).every((p) => !p.endsWith('@')));
      assertSentinelUntouched();
      await refused([
        { path: '\u{FB00}', type: 'Directory' },
        { path: 'ff', type: 'SymbolicLink', linkpath: '../../sentinel' },
        { path: '\u{FB00}/pwn', data: 'pwned' },
      ]);
    });

    it('CVE-2026-24842: a deep hardlink whose ../ chain resolves outside from the root', async () => {
      await refused([
        { path: 'a/b/c/d/', type: 'Directory' },
        { path: 'a/b/c/d/x', type: 'Link', linkpath: '../../../../sentinel/secret' },
        { path: 'a/b/c/d/x', data: 'pwned' },
      ]);
    });

    it('CVE-2026-26960: a hardlink through a symlink chain', async () => {
      await refused([
        { path: 's1', type: 'SymbolicLink', linkpath: 'd' },
        { path: 'd', type: 'SymbolicLink', linkpath: '../../sentinel' },
        { path: 'h', type: 'Link', linkpath: 's1/secret' },
        { path: 'h', data: 'pwned' },
      ]);
      // Links that stay inside are skipped, so a hardlink through them cannot reach anything.
      const r = await extract(
        tgz([
          { path: 'd/', type: 'Directory' },
          { path: 's1', type: 'SymbolicLink', linkpath: 'd' },
          { path: 'h', type: 'Link', linkpath: 's1/file' },
          { path: 'h', data: 'plain file' },
        ]),
      );
      assert.ok(r.ok);
      assert.deepEqual(walk(r.root), ['d/', 'h']);
      assertSentinelUntouched();
    });
  });

  it('entry paths are normalised or refused', () => {
    assert.equal(safeEntryPath('./a//b/./c'), 'a/b/c');
    assert.equal(safeEntryPath('./'), '');
    for (const bad of ['../a', 'a/../../b', '/etc/passwd', 'C:/x', 'c:x', 'a\\..\\b', 'a\0b']) {
      assert.throws(() => safeEntryPath(bad), ExtractError, bad);
    }
  });
});

async function collect(src: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of src) parts.push(c);
  return Buffer.concat(parts);
}
