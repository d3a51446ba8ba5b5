/**
 * Certificate-authority settings of the host that builds and apps inherit (paths to public
 * certificate files, never secrets), so package managers behind an operator's TLS-inspecting egress
 * trust what the host trusts. The docker driver mounts the files they name read-only.
 */
export const CA_VARIABLES = ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO'] as const;
