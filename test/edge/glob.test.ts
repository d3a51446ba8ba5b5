import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileGlob, countWildcards, MAX_GLOB_WILDCARDS } from '../../src/edge/glob.js';
import { pathMatcher } from '../../src/edge/rules.js';

/** A reference matcher (plain recursion; only for short inputs) to compare the linear one against. */
function reference(p: string, s: string): boolean {
  if (p === '') return s === '';
  if (p[0] === '*') return reference(p.slice(1), s) || (s !== '' && reference(p, s.slice(1)));
  return s !== '' && (p[0] === '?' || p[0] === s[0]) && reference(p.slice(1), s.slice(1));
}

test('globs: * spans any run (slashes too), ? one character, the rest literally and case-sensitively', () => {
  const cases: Array<[string, string, boolean]> = [
    ['/api/*', '/api/x', true],
    ['/api/*', '/api/x/y', true],
    ['/api/*', '/api/', true],
    ['/api/*', '/api', false],
    ['/api/*', '/apix', false],
    ['/api/*', '/other/api/x', false],
    ['/files/*.png', '/files/a.png', true],
    ['/files/*.png', '/files/a/b.png', true],
    ['/files/*.png', '/files/a.jpg', false],
    ['/a?c', '/abc', true],
    ['/a?c', '/ac', false],
    ['/a?c', '/abbc', false],
    ['/a*b*c', '/abc', true],
    ['/a*b*c', '/aXbYc', true],
    ['/a*b*c', '/acb', false],
    ['/a*bc*bc', '/abcbc', true],
    ['/a*bc*bc', '/abc', false],
    ['*x*', '/axb', true],
    ['/**', '/anything', true],
    ['/Admin/*', '/admin/x', false],
    ['/*a*a*a*b', '/aab', false],
    ['/*a*a*a*b', '/aaab', true],
    ['/*a*a*a*b', '/xaxaxab', true],
    ['/?*?', '/ab', true],
    ['/?*?', '/a', false],
  ];
  for (const [p, s, want] of cases) {
    assert.equal(compileGlob(p)(s), want, `${p} vs ${s}`);
    assert.equal(reference(p, s), want, `reference: ${p} vs ${s}`);
  }
});

test('the linear matcher agrees with a reference on many small patterns and paths', () => {
  const alphabet = ['a', 'b', '/', '*', '?'];
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
  for (let i = 0; i < 3000; i++) {
    let p = '';
    for (let k = rnd(7); k >= 0; k--) p += alphabet[rnd(5)];
    let s = '';
    for (let k = rnd(9); k > 0; k--) s += alphabet[rnd(3)];
    assert.equal(compileGlob(p)(s), reference(p, s), `${p} vs ${s}`);
  }
});

test('a pattern with the most wildcards against a 10 000-character path answers at once (no backtracking blow-up)', () => {
  const pattern = '/*a*a*a*a*a*a*a*b';
  assert.equal(countWildcards(pattern), MAX_GLOB_WILDCARDS);
  const m = compileGlob(pattern);
  const path = '/' + 'a'.repeat(10_000);
  assert.equal(m(path), false);
  assert.equal(m(path + 'b'), true);
  // The old regex form of this pattern takes exponential time on such a path; this loop would not end.
  for (let i = 0; i < 100; i++) m(path);
});

test('countWildcards counts * and ? together', () => {
  assert.equal(countWildcards('/api'), 0);
  assert.equal(countWildcards('/a/*/b?'), 2);
  assert.equal(countWildcards('/*a*a*a*a*a*a*a*a*b'), 9);
});

test('rule paths are normalised before matching; prefixes end at a "/" or a ";"', () => {
  assert.ok(pathMatcher('/%61dmin')('/admin'));
  assert.ok(pathMatcher('/x/../admin/')('/admin/y'));
  const p = pathMatcher('/admin');
  assert.ok(p('/admin') && p('/admin/') && p('/admin/x') && p('/admin;jsessionid=1'));
  assert.ok(!p('/administrator') && !p('/Admin'));
});
