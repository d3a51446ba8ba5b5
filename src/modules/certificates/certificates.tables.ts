/** Kysely table interfaces of the certificates area (migrations 017_certificates, 019, 020, 028). */

/** One certificate per domain (contract section 14): the public chain, the private key sealed with the secret key. */
export interface CertificatesTable {
  id: string;
  orgId: string;
  projectId: string;
  /** The name the certificate is for (unique on the instance; `*.<parent>` for a wildcard one). */
  domain: string;
  /** pending (never issued yet) | issued | failed (the last attempt failed; an older certificate may still be held). */
  status: string;
  /** PEM chain, leaf first (public). Null until the first issuance. */
  certPem: string | null;
  /** The private key (PEM) sealed with encryptSecret(keyring, key, `certificate:<domain>`). */
  keySealed: string | null;
  /** The issuing CA's name (O, else CN of the leaf's issuer). */
  issuer: string | null;
  /** The leaf's notAfter (ISO-8601). */
  expiresAt: string | null;
  /** Why the last attempt failed, in Berth's words with the ACME server's detail (never a secret). */
  error: string | null;
  /** Failed attempts since the last issuance. */
  attempts: number;
  /** When the scheduler may enqueue the next attempt (backoff; also a guard while a job is queued). */
  nextAttemptAt: string | null;
  /**
   * When the scheduler renews the issued certificate (migration 028): a random time inside the window
   * the CA's ACME Renewal Information suggests (RFC 9773), else two thirds of its lifetime. Null: not
   * issued yet (or issued before migration 028; the next pass fills it in).
   */
  renewAt: string | null;
  /** When the CA's renewal information is asked again (its Retry-After); null when the CA offers none. */
  renewalInfoAt: string | null;
  /** The `expiresAt` a certificate.expiring notice was sent for (migration 040); null: none yet. */
  expiryNoticedFor: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The ACME account per directory, created once and reused by its URL. */
export interface AcmeAccountsTable {
  directoryUrl: string;
  accountUrl: string;
  /** The account key (PEM) sealed with `acme-account:<directoryUrl>`. */
  keySealed: string;
  email: string | null;
  createdAt: string;
}

/** Pending challenges, so that any instance's edge can answer them (migrations 017, 019). */
export interface AcmeChallengesTable {
  token: string;
  /** HTTP-01: what the edge answers at the token's path; TLS-ALPN-01: what the certificate's acmeIdentifier hashes; DNS-01: the TXT value. */
  keyAuthorization: string;
  /** The name validated (a wildcard's base name for DNS-01). */
  domain: string;
  expiresAt: string;
  /** `http-01` | `tls-alpn-01` | `dns-01`. */
  kind: string;
  /** TLS-ALPN-01: the self-signed challenge certificate (public). */
  certPem: string | null;
  /** TLS-ALPN-01: its key (PEM) sealed with `acme-challenge:<token>`. */
  keySealed: string | null;
  /** DNS-01: the TXT record's name (`_acme-challenge.<base>`). */
  recordName: string | null;
  /** DNS-01: the provider's id of the record (to remove it, also after a crash). */
  recordId: string | null;
}

/** The instance's own certificates (migration 020): the free domains' wildcard `*.<apps domain>`; a project's certificate without org or project. */
export type InstanceCertificatesTable = Omit<CertificatesTable, 'id' | 'orgId' | 'projectId' | 'expiryNoticedFor'>;

export interface CertificateTables {
  certificates: CertificatesTable;
  acmeAccounts: AcmeAccountsTable;
  acmeChallenges: AcmeChallengesTable;
  instanceCertificates: InstanceCertificatesTable;
}
