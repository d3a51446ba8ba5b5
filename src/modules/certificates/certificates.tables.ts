/** Kysely table interfaces of the certificates area (migration 017_certificates). */

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

/** Pending HTTP-01 challenges, so that any instance's edge can answer them. */
export interface AcmeChallengesTable {
  token: string;
  keyAuthorization: string;
  domain: string;
  expiresAt: string;
}

export interface CertificateTables {
  certificates: CertificatesTable;
  acmeAccounts: AcmeAccountsTable;
  acmeChallenges: AcmeChallengesTable;
}
