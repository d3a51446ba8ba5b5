import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** A throwaway CA and an ECDSA P-256 leaf it signed for `names`, made with openssl (argument arrays) in `dir`. */
export function makeCertificate(dir: string, names: string[]): { ca: string; cert: string; key: string } {
  const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 20_000 });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(['req', '-x509', ...ec, '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Berth edge test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  openssl(['req', ...ec, '-keyout', 'key.pem', '-out', 'leaf.csr', '-subj', `/CN=${names[0]}`]);
  writeFileSync(path.join(dir, 'ext.cnf'), `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n`);
  openssl(['x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-out', 'cert.pem', '-days', '2', '-extfile', 'ext.cnf']);
  const read = (f: string) => readFileSync(path.join(dir, f), 'utf8');
  return { ca: read('ca.pem'), cert: read('cert.pem'), key: read('key.pem') };
}
