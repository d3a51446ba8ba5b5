import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LineSplitter, MASK, RedactStream, Redactor, redactText } from '../../src/runtime/redact.js';
import { cutAt, feed } from '../support/redaction.js';

test('a secret value in one write is replaced with ********', () => {
  assert.equal(feed(['hunter2-secret'], ['password is hunter2-secret, ok\n']), `password is ${MASK}, ok\n`);
});

test('a secret split across two writes is still replaced', () => {
  assert.equal(feed(['hunter2-secret'], ['password is hunt', 'er2-secret!\n']), `password is ${MASK}!\n`);
});

test('a secret split across many one-byte writes is replaced', () => {
  const text = 'x=TOPSECRETVALUE;y=TOPSECRETVALUE\n';
  assert.equal(feed(['TOPSECRETVALUE'], [...text].map((c) => c)), `x=${MASK};y=${MASK}\n`);
});

test('several secrets, overlapping and nested, never leak', () => {
  const out = feed(['abcdef', 'cdefghij', 'efg'], ['..abcdefghij..', 'efg..cdefghij\n']);
  assert.ok(!out.includes('abcdef'));
  assert.ok(!out.includes('cdefghij'));
  assert.ok(!out.includes('efg'));
});

test('a multi-line secret (a PEM key) is redacted line by line', () => {
  const pem = '-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END KEY-----';
  const out = feed([pem], ['key: ', pem.slice(0, 30), pem.slice(30), '\n']);
  assert.ok(!out.includes('MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu'));
});

test('output flows at every line end: nothing is held back past a newline', () => {
  const r = new Redactor(['a-very-long-secret-value-that-is-long']);
  assert.equal(r.push(Buffer.from('listening on 3000\n')).toString(), 'listening on 3000\n');
  // a partial line may be held (it could be the start of the secret), up to the secret's length - 1
  const held = r.push(Buffer.from('a-very-long'));
  assert.equal(held.length, 0);
  assert.equal(r.push(Buffer.from('-secret-value-that-is-long and more\n')).toString(), `${MASK} and more\n`);
});

test('values shorter than three characters are not treated as secrets; empty secrets change nothing', () => {
  assert.equal(feed(['', 'x'], ['hello x\n']), 'hello x\n');
});

test('multi-byte UTF-8 secrets split inside a character are redacted', () => {
  const secret = 'pässwörd-ü';
  const bytes = Buffer.from(`see ${secret} here\n`);
  const chunks = [bytes.subarray(0, 6), bytes.subarray(6, 7), bytes.subarray(7)];
  assert.equal(feed([secret], chunks), `see ${MASK} here\n`);
});

test('redactText redacts a whole string', () => {
  assert.equal(redactText('token=s3cr3t-abc and s3cr3t-abc', ['s3cr3t-abc']), `token=${MASK} and ${MASK}`);
});

test('RedactStream is a Transform that redacts what is piped through it', async () => {
  const s = new RedactStream(['sk_live_123456']);
  const chunks: Buffer[] = [];
  s.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise((r) => s.on('end', r));
  s.write('key sk_live');
  s.write('_123456 done');
  s.end();
  await done;
  assert.equal(Buffer.concat(chunks).toString(), `key ${MASK} done`);
});

test('property: however the output is cut into writes, no secret value survives', () => {
  const secretArb = fc.string({ minLength: 3, maxLength: 24, unit: fc.constantFrom('a', 'b', 'c', 'x', 'é', '-', '\n') }).filter((s) => !s.includes('\n') && s.length >= 3);
  fc.assert(
    fc.property(
      fc.array(secretArb, { minLength: 1, maxLength: 4 }),
      fc.array(fc.string({ maxLength: 20, unit: fc.constantFrom('a', 'b', 'c', 'x', 'é', ' ', '\n') }), { maxLength: 10 }),
      fc.array(fc.nat({ max: 200 }), { maxLength: 8 }),
      (secrets, fillers, cuts) => {
        let text = '';
        fillers.forEach((f, i) => (text += f + secrets[i % secrets.length]));
        text += secrets[0];
        const bytes = Buffer.from(text);
        const chunks = cutAt(bytes, cuts);
        const out = feed(secrets, chunks);
        // With the mask removed, what remains must not contain any secret (a secret may be made
        // of mask characters only in theory; the alphabet here has no '*').
        for (const s of secrets) assert.ok(!out.includes(s), `secret ${JSON.stringify(s)} leaked in ${JSON.stringify(out)}`);
        // Splitting must not change the result.
        assert.equal(out, feed(secrets, [bytes]));
      },
    ),
    { numRuns: 500 },
  );
});

test('LineSplitter splits LF, CRLF and CR lines and flushes the last partial line', () => {
  const lines: string[] = [];
  const s = new LineSplitter((l) => lines.push(l), 10);
  s.push('one\r\ntwo\nthr');
  s.push(Buffer.from('ee\rfour'));
  s.push('0123456789abc');
  s.end();
  assert.deepEqual(lines, ['one', 'two', 'three', 'four012345', '6789abc']);
});
