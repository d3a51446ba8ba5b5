import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { h2loadArgs, parseH2load, requestTimes } from '../../bench/h2load.js';

/** The summary h2load 1.52 (Debian 12's nghttp2-client) printed for a round against a node:http2 server. */
const SUMMARY = `
finished in 1.01s, 27228.00 req/s, 1010.55KB/s
requests: 27228 total, 27232 started, 27228 done, 27228 succeeded, 0 failed, 0 errored, 0 timeout
status codes: 27228 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 1010.55KB (1034808) total, 212.82KB (217932) headers (space savings 90.12%), 319.08KB (326736) data
`;

describe('bench h2load rounds', () => {
  it('reads the request rate from the summary, with no failures', () => {
    assert.deepEqual(parseH2load(SUMMARY), { rps: 27228, errors: 0 });
  });

  it('counts failed and errored requests and answers other than 2xx as errors', () => {
    const out = SUMMARY.replace('27228 succeeded, 0 failed, 0 errored', '27220 succeeded, 3 failed, 2 errored').replace('27228 2xx, 0 3xx, 0 4xx, 0 5xx', '27218 2xx, 0 3xx, 4 4xx, 6 5xx');
    assert.deepEqual(parseH2load(out), { rps: 27228, errors: 3 + 2 + 10 });
  });

  it('sends HTTP/2 over TLS to the named host on the given port, streams in flight per connection', () => {
    assert.deepEqual(h2loadArgs(8443, 'app.bench.test', 3000, 4, 8), ['-D', '3', '-c', '4', '-m', '8', '-t', '1', '--connect-to=127.0.0.1:8443', 'https://app.bench.test/']);
  });

  it('sends plain HTTP/1.1 with --h1, one request in flight per connection', () => {
    assert.deepEqual(h2loadArgs(8080, 'app.localhost', 3000, 32, 8, 'h1'), ['--h1', '-D', '3', '-c', '32', '-m', '1', '-t', '1', '--connect-to=127.0.0.1:8080', 'http://app.localhost/']);
  });

  it('sends HTTP/1.1 over TLS with --h1 to an https URL', () => {
    assert.deepEqual(h2loadArgs(8443, 'app.bench.test', 2000, 32, 1, 'h1-tls'), ['--h1', '-D', '2', '-c', '32', '-m', '1', '-t', '1', '--connect-to=127.0.0.1:8443', 'https://app.bench.test/']);
  });

  it('asks for the given path with the given headers', () => {
    assert.deepEqual(h2loadArgs(3000, '127.0.0.1', 3000, 32, 1, 'h1', { path: '/api/auth/me', headers: { authorization: 'Bearer t' } }), [
      '--h1', '-D', '3', '-c', '32', '-m', '1', '-t', '1', '-H', 'authorization: Bearer t', '--connect-to=127.0.0.1:3000', 'http://127.0.0.1/api/auth/me',
    ]);
  });

  it("reads each request's time from h2load's log file, in milliseconds, sorted", () => {
    const log = '1796202088912345\t200\t2500\n1796202088912400\t200\t900\n1796202088912500\t404\t1200\n';
    assert.deepEqual(requestTimes(log), [0.9, 1.2, 2.5]);
  });

  it('refuses output without a summary instead of reading a rate of 0', () => {
    assert.throws(() => parseH2load('TLS handshake failed'), /no summary/);
  });
});
