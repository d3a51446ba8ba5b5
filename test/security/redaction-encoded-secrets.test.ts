/**
 * Security review, issue 15 point 7: redaction caught a secret only byte for byte. A build or app that
 * printed it JSON-escaped (`console.log(JSON.stringify(env))`) or URL-encoded (a logged request URL,
 * a form body) leaked it. Every form is redacted now, also when split across writes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MASK, Redactor, secretForms } from '../../src/runtime/redact.js';
import { cutAt, feed } from '../support/redaction.js';

/** A secret with every character the review named: quote, backslash, slash, space, non-ASCII. */
const NASTY = 'p@ss "w/o\\rd" ünï€ 😀&=?+';
const MULTILINE = 'line one "x"\nline/two \\ ü';

function encodings(s: string): Record<string, string> {
  const c = encodeURIComponent(s);
  return {
    json: JSON.stringify(s).slice(1, -1),
    jsonSlash: JSON.stringify(s).slice(1, -1).replace(/\//g, '\\/'),
    jsonAscii: JSON.stringify(s)
      .slice(1, -1)
      .replace(/[\u0080-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`),
    uriComponent: c,
    plusForSpace: c.replace(/%20/g, '+'),
    formEncoded: new URLSearchParams({ k: s }).toString().slice(2),
    lowerHex: c.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
  };
}

for (const [label, secret] of [
  ['a secret with quotes, backslashes, slashes, spaces and non-ASCII', NASTY],
  ['a multi-line secret', MULTILINE],
] as const) {
  test(`${label}: its JSON-escaped and URL-encoded forms are redacted`, () => {
    for (const [form, encoded] of Object.entries(encodings(secret))) {
      assert.notEqual(encoded, secret, `${form} differs from the raw value`);
      const out = feed([secret], [`before ${encoded} after\n`]);
      assert.equal(out, `before ${MASK} after\n`, `${form} form ${JSON.stringify(encoded)} leaked`);
    }
  });
}

test('the attack: an app prints its environment as JSON and a URL with the secret in the query', () => {
  const env = { API_KEY: NASTY, OTHER: 'plain' };
  const lines = [JSON.stringify(env) + '\n', `GET /callback?key=${encodeURIComponent(NASTY)}&x=1\n`, `body: key=${new URLSearchParams({ k: NASTY }).toString().slice(2)}\n`];
  const out = feed([NASTY], lines);
  for (const f of Object.values(encodings(NASTY))) assert.ok(!out.includes(f), `leaked ${f}`);
  assert.equal(out.split(MASK).length - 1, 3);
  assert.ok(out.includes('"OTHER":"plain"'));
});

test('a multi-line secret JSON-escaped as a whole (\\n inside one line) is redacted as a whole', () => {
  const out = feed([MULTILINE], [JSON.stringify({ k: MULTILINE }) + '\n']);
  assert.equal(out, `{"k":"${MASK}"}\n`);
});

test('encoded forms contain no newline, so output still flows at every line end', () => {
  for (const f of secretForms(MULTILINE)) assert.ok(!f.includes('\n'), JSON.stringify(f));
  const r = new Redactor([NASTY]);
  assert.equal(r.push(Buffer.from('ready\n')).toString(), 'ready\n');
});

test('property: an encoded secret cut into writes at any points never survives', () => {
  const unit = fc.constantFrom('a', 'Z', '"', '\\', '/', ' ', 'é', '€', '&', '+', '%', '\n');
  const secretArb = fc.string({ minLength: 3, maxLength: 16, unit }).filter((s) => s.replace(/\n/g, '').length >= 3 && s.split('\n').every((p) => p.length >= 3));
  fc.assert(
    fc.property(secretArb, fc.constantFrom(...Object.keys(encodings('x'))), fc.array(fc.nat({ max: 400 }), { maxLength: 8 }), (secret, form, cuts) => {
      const encoded = encodings(secret)[form]!;
      const bytes = Buffer.from(`x ${encoded} y ${encoded}\n`);
      const chunks = cutAt(bytes, cuts);
      const out = feed([secret], chunks);
      assert.ok(!out.includes(encoded), `${form} ${JSON.stringify(encoded)} leaked in ${JSON.stringify(out)}`);
      assert.equal(out, feed([secret], [bytes]));
    }),
    { numRuns: 400 },
  );
});
