import { realpathSync } from 'node:fs';

/**
 * Certificate-authority settings of the host that builds and apps inherit (paths to public
 * certificate files, never secrets), so package managers behind an operator's TLS-inspecting egress
 * trust what the host trusts. The docker driver mounts the files they name read-only.
 */
export const CA_VARIABLES = ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO'] as const;

/** The system bundles of the distributions Berth runs on (Debian/Ubuntu, Fedora/RHEL, Alpine/Arch, SUSE). */
const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem', '/etc/ssl/ca-bundle.pem'];

/** Node's option that reads OpenSSL's store (`SSL_CERT_FILE`) when the first TLS connection is made. */
export const OPENSSL_CA_OPTION = '--use-openssl-ca';

const real = (p: string): string | null => {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
};

/**
 * The CA variables a box gets from `hostEnv`. One exception: when `NODE_EXTRA_CA_CERTS` names the
 * system's whole bundle, Node would parse its ~140 certificates at every start, before any code runs
 * (43-55 ms of each app's and build step's start on the machines measured, docs/benchmarks.md). Such
 * a box gets `NODE_OPTIONS=--use-openssl-ca` with `SSL_CERT_FILE` naming that bundle instead: the same
 * trust (the system bundle holds the public roots Node bundles, plus what the operator added), read
 * only when the app first opens a TLS connection. A file that is not a system bundle (an operator's
 * own CA alone) is passed on as it is.
 */
export function caEnv(hostEnv: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const e: Record<string, string> = {};
  for (const k of CA_VARIABLES) {
    const v = hostEnv[k];
    if (v && /^\/[\w./-]+$/.test(v)) e[k] = v;
  }
  const extra = e.NODE_EXTRA_CA_CERTS ? real(e.NODE_EXTRA_CA_CERTS) : null;
  if (extra && SYSTEM_BUNDLES.some((b) => real(b) === extra)) {
    e.SSL_CERT_FILE = e.NODE_EXTRA_CA_CERTS!;
    delete e.NODE_EXTRA_CA_CERTS;
    e.NODE_OPTIONS = OPENSSL_CA_OPTION;
  }
  return e;
}

/**
 * `env` (a box's final environment: the base under the project's own variables) with Node's CA option
 * kept when the base has it and the project set `NODE_OPTIONS` of its own (theirs follows ours).
 */
export function withCaOptions(env: Record<string, string>, base: Record<string, string>): Record<string, string> {
  if (base.NODE_OPTIONS !== OPENSSL_CA_OPTION || env.NODE_OPTIONS === undefined) return env;
  if (env.NODE_OPTIONS.split(/\s+/).includes(OPENSSL_CA_OPTION)) return env;
  return { ...env, NODE_OPTIONS: `${OPENSSL_CA_OPTION} ${env.NODE_OPTIONS}`.trim() };
}
