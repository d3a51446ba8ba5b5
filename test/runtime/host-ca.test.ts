// @store-independent: reads files and environments only
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { caEnv, OPENSSL_CA_OPTION, withCaOptions } from '../../src/runtime/host-ca.js';

const BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

describe('the host CA settings boxes inherit', () => {
  it('passes the CA variables that name absolute paths and drops the rest', () => {
    const e = caEnv({ SSL_CERT_DIR: '/etc/ssl/certs', CURL_CA_BUNDLE: 'relative.pem', PIP_CERT: '/x;rm', SECRET: '/etc/secret' });
    assert.deepEqual(e, { SSL_CERT_DIR: '/etc/ssl/certs' });
  });

  it("keeps NODE_EXTRA_CA_CERTS that names an operator's own CA file", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-ca-'));
    writeFileSync(path.join(dir, 'corp.pem'), '');
    const e = caEnv({ NODE_EXTRA_CA_CERTS: path.join(dir, 'corp.pem') });
    assert.deepEqual(e, { NODE_EXTRA_CA_CERTS: path.join(dir, 'corp.pem') });
  });

  it('turns NODE_EXTRA_CA_CERTS naming the system bundle (or a link to it) into OpenSSL’s store read on first use', { skip: !existsSync(BUNDLE) && 'no Debian CA bundle' }, () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-ca-'));
    symlinkSync(BUNDLE, path.join(dir, 'link.pem'));
    for (const file of [BUNDLE, path.join(dir, 'link.pem')]) {
      assert.deepEqual(caEnv({ NODE_EXTRA_CA_CERTS: file, SSL_CERT_FILE: '/elsewhere.pem' }), { SSL_CERT_FILE: file, NODE_OPTIONS: OPENSSL_CA_OPTION });
    }
  });

  it("keeps the CA option in front of a project's own NODE_OPTIONS, once", () => {
    const base = { NODE_OPTIONS: OPENSSL_CA_OPTION };
    assert.equal(withCaOptions({ NODE_OPTIONS: '--max-old-space-size=512' }, base).NODE_OPTIONS, `${OPENSSL_CA_OPTION} --max-old-space-size=512`);
    assert.equal(withCaOptions({ NODE_OPTIONS: `--max-old-space-size=512 ${OPENSSL_CA_OPTION}` }, base).NODE_OPTIONS, `--max-old-space-size=512 ${OPENSSL_CA_OPTION}`);
    assert.deepEqual(withCaOptions({ NODE_OPTIONS: '--inspect' }, {}), { NODE_OPTIONS: '--inspect' });
  });

  it('with the option, Node trusts a server signed by a CA found only in SSL_CERT_FILE, and not without it', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'berth-ca-'));
    const f = (n: string) => path.join(dir, n);
    const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
    ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=berth test CA');
    ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('srv.key'), '-out', f('srv.csr'), '-subj', '/CN=localhost');
    writeFileSync(f('ext'), 'subjectAltName=DNS:localhost\n');
    ssl('x509', '-req', '-in', f('srv.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('srv.pem'), '-days', '2', '-extfile', f('ext'));
    // A TLS server and a client in one child: the client's verdict is what the store decided.
    const script = `const tls=require('tls'),fs=require('fs');const s=tls.createServer({key:fs.readFileSync(${JSON.stringify(f('srv.key'))}),cert:fs.readFileSync(${JSON.stringify(f('srv.pem'))})},c=>c.end());s.listen(0,'127.0.0.1',()=>{const c=tls.connect({host:'127.0.0.1',servername:'localhost',port:s.address().port});c.on('secureConnect',()=>{process.stdout.write('trusted');process.exit(0)});c.on('error',e=>{process.stdout.write(e.code);process.exit(0)})})`;
    const run = (args: string[]) => execFileSync(process.execPath, [...args, '-e', script], { env: { PATH: process.env.PATH ?? '', SSL_CERT_FILE: f('ca.pem') }, encoding: 'utf8' });
    assert.equal(run([OPENSSL_CA_OPTION]), 'trusted');
    assert.notEqual(run([]), 'trusted');
  });
});
