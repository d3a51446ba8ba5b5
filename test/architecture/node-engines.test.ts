/**
 * Node 20, 22 and 24 are supported alike (README; issue 34 point 9): the package says so in
 * `engines`, and no installed dependency declares an `engines.node` that leaves one of them out.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import semver from 'semver';

const ROOT = new URL('../..', import.meta.url).pathname;
/** The first release of each supported line that every dependency accepts (Vite and Rolldown want 22.12). */
const SUPPORTED = ['20.19.0', '22.12.0', '24.0.0'];

/** Every package.json under node_modules (nested ones too), with its engines.node when it has one. */
function installed(dir: string, out: Array<{ name: string; range: string }> = []): Array<{ name: string; range: string }> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || !(entry.isDirectory() || entry.isSymbolicLink())) continue;
    const p = path.join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      installed(p, out);
      continue;
    }
    const file = path.join(p, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string; engines?: { node?: unknown } };
      if (typeof pkg.engines?.node === 'string') out.push({ name: `${pkg.name}@${pkg.version}`, range: pkg.engines.node });
    }
    if (existsSync(path.join(p, 'node_modules'))) installed(path.join(p, 'node_modules'), out);
  }
  return out;
}

describe('supported Node versions', () => {
  it("package.json's engines accepts Node 20.19+, 22.12+ and 24 with no upper bound", () => {
    const range = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    for (const v of [...SUPPORTED, '20.30.0', '22.30.0', '24.30.0', '26.0.0']) assert.ok(semver.satisfies(v, range), `engines.node "${range}" accepts ${v}`);
    assert.ok(!semver.satisfies('20.18.0', range), 'below 20.19 is refused (Vite needs it)');
  });

  it('no installed dependency declares an engines.node that excludes one of them', () => {
    const offenders = installed(path.join(ROOT, 'node_modules')).flatMap(({ name, range }) =>
      SUPPORTED.filter((v) => semver.validRange(range) && !semver.satisfies(v, range)).map((v) => `${name} (engines.node "${range}") excludes ${v}`),
    );
    assert.deepEqual(offenders, []);
  });
});
