import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizePath, normalizeTarget, pathOfTarget } from '../../src/edge/normalize.js';

test('clean paths come back as the very same string', () => {
  for (const p of ['/', '/admin', '/api/v1/users', '/a-b_c~d.e', '/files/x.png', '/admin;v=1', '/a:b@c!$&\'()*+,=']) {
    assert.equal(normalizeTarget(p), p);
  }
  const url = '/api/x?q=1&r=%2F..//';
  assert.equal(normalizeTarget(url), url, 'the query string is kept as sent');
});

test('unreserved percent-escapes are decoded, other escapes keep their byte in uppercase hex', () => {
  assert.equal(normalizeTarget('/%61dmin'), '/admin');
  assert.equal(normalizeTarget('/%41%5a%30%2D%2e%5F%7E'), '/AZ0-._~');
  assert.equal(normalizeTarget('/caf%c3%a9'), '/caf%C3%A9');
  assert.equal(normalizeTarget('/a%20b'), '/a%20b');
  assert.equal(normalizeTarget('/100%25'), '/100%25', '%25 is not decoded (no double decoding)');
  assert.equal(normalizeTarget('/%2541dmin'), '/%2541dmin');
  assert.equal(normalizeTarget('/a%3Bb'), '/a%3Bb');
  assert.equal(normalizeTarget('/caf\u00e9'), '/caf%E9', 'a raw byte outside ASCII is escaped');
});

test('slashes merge and dot segments go (RFC 3986 5.2.4), after decoding', () => {
  const cases: Array<[string, string]> = [
    ['//admin', '/admin'],
    ['///admin//x', '/admin/x'],
    ['/x/../admin', '/admin'],
    ['/./admin', '/admin'],
    ['/x/./../admin', '/admin'],
    ['/../../admin', '/admin'],
    ['/%2e%2e/admin', '/admin'],
    ['/x/%2E%2e/admin', '/admin'],
    ['/x/.%2e/admin', '/admin'],
    ['/x/%2e/admin', '/x/admin'],
    ['/a/b/..', '/a/'],
    ['/a/b/../', '/a/'],
    ['/a/.', '/a/'],
    ['/a/', '/a/'],
    ['/a//', '/a/'],
    ['/..', '/'],
    ['/.well-known/acme', '/.well-known/acme'],
    ['/a/..b/c', '/a/..b/c'],
    ['/a/.../c', '/a/.../c'],
  ];
  for (const [input, want] of cases) assert.equal(normalizeTarget(input), want, input);
  assert.equal(normalizeTarget('/x/../admin?a=../b'), '/admin?a=../b');
});

test('absolute-form targets are reduced to their path and query', () => {
  assert.equal(normalizeTarget('http://app.example/admin'), '/admin');
  assert.equal(normalizeTarget('HTTPS://app.example:8443/x/../admin?y=1'), '/admin?y=1');
  assert.equal(normalizeTarget('http://app.example'), '/');
  assert.equal(normalizeTarget('http://app.example?q'), '/?q');
  assert.equal(normalizeTarget('http://user@app.example//admin'), '/admin');
});

test('encoded separators, NUL, backslashes, bad escapes and odd targets are refused', () => {
  const refused = [
    '/admin%2fx',
    '/admin%2Fx',
    '/a%2f..%2fadmin',
    '/a%5cb',
    '/a%5Cb',
    '/a\\b',
    '/a%00',
    '/a%',
    '/a%4',
    '/a%zz',
    '/a%g1',
    '/a#b',
    '/a b',
    '/a\tb',
    '/..;/admin',
    '/x/..;/admin',
    '/x/.;x/admin',
    '*',
    'admin',
    'example.com:443',
    'ftp://h/admin',
    '',
  ];
  for (const t of refused) assert.equal(normalizeTarget(t), null, JSON.stringify(t));
});

test('normalizePath takes rule patterns (wildcards are plain characters, ? is not a query)', () => {
  assert.equal(normalizePath('/api/*'), '/api/*');
  assert.equal(normalizePath('/a//b/./*.png'), '/a/b/*.png');
  assert.equal(normalizePath('/%61pi/?x'), '/api/?x');
  assert.equal(normalizePath('/a%2Fb'), null);
  assert.equal(normalizePath('api'), null);
});

test('pathOfTarget drops the query string', () => {
  assert.equal(pathOfTarget('/a/b?c=d'), '/a/b');
  assert.equal(pathOfTarget('/a/b'), '/a/b');
});

test('a long path normalises in one pass', () => {
  const long = '/' + 'a/./'.repeat(4000) + '%61';
  const out = normalizeTarget(long);
  assert.equal(out, '/' + 'a/'.repeat(4000) + 'a');
});
