import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Db } from '../../db/client.js';
import type { AcmeAccountsTable, AcmeChallengesTable, CertificatesTable, InstanceCertificatesTable } from './certificates.tables.js';
import { inOrg } from '../../db/scope.js';

/**
 * SQL on the certificates area's tables. A certificate is an org's record: its queries are scoped by
 * org. The edge's lookups by name (`...AnyOrg`: a TLS server name or an HTTP-01 token names no org,
 * like the edge's host lookups) and the scheduler's sweep are instance-wide by nature.
 */

export type CertificateRow = Selectable<CertificatesTable>;
export type AcmeAccountRow = Selectable<AcmeAccountsTable>;
export type InstanceCertificateRow = Selectable<InstanceCertificatesTable>;
export type AcmeChallengeRow = Selectable<AcmeChallengesTable>;

// ---------------------------------------------------------------- certificates (an org's)

export async function findCertificate(db: Db, orgId: string, domain: string): Promise<CertificateRow | undefined> {
  return db.selectFrom('certificates').selectAll().where(inOrg(orgId)).where('domain', '=', domain).executeTakeFirst();
}

/** The org's certificates of `domains` (the domain answers' `tls`). */
export async function certificatesOf(db: Db, orgId: string, domains: readonly string[]): Promise<CertificateRow[]> {
  if (domains.length === 0) return [];
  return db.selectFrom('certificates').selectAll().where(inOrg(orgId)).where('domain', 'in', [...domains]).execute();
}

export async function insertCertificate(db: Db, row: Insertable<CertificatesTable>): Promise<void> {
  await db.insertInto('certificates').values(row).execute();
}

export async function updateCertificate(db: Db, orgId: string, domain: string, set: Updateable<CertificatesTable>): Promise<number> {
  const r = await db.updateTable('certificates').set(set).where(inOrg(orgId)).where('domain', '=', domain).executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/**
 * Takes the row's next attempt: moves `nextAttemptAt` from `seen` to `until` only when nobody else
 * moved it since it was read (two schedulers, or a request and the scheduler, enqueue one job).
 */
export async function claimAttempt(db: Db, orgId: string, domain: string, seen: string | null, until: string): Promise<boolean> {
  let q = db.updateTable('certificates').set({ nextAttemptAt: until }).where(inOrg(orgId)).where('domain', '=', domain);
  q = seen === null ? q.where('nextAttemptAt', 'is', null) : q.where('nextAttemptAt', '=', seen);
  return Number((await q.executeTakeFirst()).numUpdatedRows) === 1;
}

/**
 * Writes a certificate's renewal time (and when to ask the CA's renewal information again) unless the
 * row changed since it was read (`updatedAt`: a new certificate or a failed attempt came in between).
 */
export async function setRenewal(db: Db, orgId: string, domain: string, seenUpdatedAt: string, set: { renewAt: string; renewalInfoAt: string | null }): Promise<void> {
  await db.updateTable('certificates').set(set).where(inOrg(orgId)).where('domain', '=', domain).where('updatedAt', '=', seenUpdatedAt).execute();
}

export async function deleteCertificate(db: Db, orgId: string, domain: string): Promise<number> {
  const r = await db.deleteFrom('certificates').where(inOrg(orgId)).where('domain', '=', domain).executeTakeFirst();
  return Number(r.numDeletedRows);
}

// ---------------------------------------------------------------- instance-wide reads (the edge, the scheduler)

/** The certificate rows of the names `names` (a server name and its `*.<parent>`) that hold a certificate, whatever their org. */
export async function servableCertificatesAnyOrg(db: Db, names: readonly string[]): Promise<Pick<CertificateRow, 'domain' | 'certPem' | 'keySealed' | 'expiresAt' | 'updatedAt'>[]> {
  return db
    .selectFrom('certificates')
    .select(['domain', 'certPem', 'keySealed', 'expiresAt', 'updatedAt'])
    .where('domain', 'in', [...names])
    .where('certPem', 'is not', null)
    .where('keySealed', 'is not', null)
    .execute();
}

/** Every certificate row's schedule (the scheduler's pass), whatever its org. */
export async function certificateSchedulesAnyOrg(
  db: Db,
): Promise<Pick<CertificateRow, 'orgId' | 'projectId' | 'domain' | 'status' | 'expiresAt' | 'nextAttemptAt' | 'renewAt' | 'renewalInfoAt' | 'expiryNoticedFor' | 'updatedAt'>[]> {
  return db
    .selectFrom('certificates')
    .select(['orgId', 'projectId', 'domain', 'status', 'expiresAt', 'nextAttemptAt', 'renewAt', 'renewalInfoAt', 'expiryNoticedFor', 'updatedAt'])
    .execute();
}

/** Records that certificate.expiring was sent for the certificate expiring at `expiresAt`; false when another pass did first. */
export async function markExpiryNoticed(db: Db, orgId: string, domain: string, expiresAt: string): Promise<boolean> {
  const r = await db
    .updateTable('certificates')
    .set({ expiryNoticedFor: expiresAt })
    .where(inOrg(orgId))
    .where('domain', '=', domain)
    .where((eb) => eb.or([eb('expiryNoticedFor', 'is', null), eb('expiryNoticedFor', '!=', expiresAt)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

// ---------------------------------------------------------------- ACME accounts and challenges (the instance's)

export async function findAccount(db: Db, directoryUrl: string): Promise<AcmeAccountRow | undefined> {
  return db.selectFrom('acmeAccounts').selectAll().where('directoryUrl', '=', directoryUrl).executeTakeFirst();
}

export async function insertAccount(db: Db, row: AcmeAccountRow): Promise<void> {
  await db.insertInto('acmeAccounts').values(row).execute();
}

export async function deleteAccount(db: Db, directoryUrl: string): Promise<void> {
  await db.deleteFrom('acmeAccounts').where('directoryUrl', '=', directoryUrl).execute();
}

export async function insertChallenge(db: Db, row: Insertable<AcmeChallengesTable>): Promise<void> {
  await db.insertInto('acmeChallenges').values(row).execute();
}

export async function deleteChallenge(db: Db, token: string): Promise<void> {
  await db.deleteFrom('acmeChallenges').where('token', '=', token).execute();
}

/** The key authorization of a pending HTTP-01 token (any org's order: a token names no org). */
export async function challengeAnyOrg(db: Db, token: string, now: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('acmeChallenges')
    .select('keyAuthorization')
    .where('token', '=', token)
    .where('kind', '=', 'http-01')
    .where('expiresAt', '>', now)
    .executeTakeFirst();
  return row?.keyAuthorization;
}

/** The newest pending TLS-ALPN-01 challenge certificate of `domain` (any org's order). */
export async function alpnChallengeAnyOrg(db: Db, domain: string, now: string): Promise<Pick<AcmeChallengeRow, 'token' | 'certPem' | 'keySealed'> | undefined> {
  return db
    .selectFrom('acmeChallenges')
    .select(['token', 'certPem', 'keySealed'])
    .where('kind', '=', 'tls-alpn-01')
    .where('domain', '=', domain)
    .where('expiresAt', '>', now)
    .where('certPem', 'is not', null)
    .where('keySealed', 'is not', null)
    .orderBy('expiresAt', 'desc')
    .executeTakeFirst();
}

/** Makes a challenge row due for the next pass's cleanup (a DNS-01 record whose removal failed). */
export async function expireChallenge(db: Db, token: string, at: string): Promise<void> {
  await db.updateTable('acmeChallenges').set({ expiresAt: at }).where('token', '=', token).execute();
}

/** Expired DNS-01 rows that still name a published record (an order that crashed or could not remove it). */
export async function expiredDnsChallenges(db: Db, now: string): Promise<Pick<AcmeChallengeRow, 'token' | 'recordName' | 'recordId'>[]> {
  return db
    .selectFrom('acmeChallenges')
    .select(['token', 'recordName', 'recordId'])
    .where('kind', '=', 'dns-01')
    .where('expiresAt', '<=', now)
    .where('recordId', 'is not', null)
    .execute();
}

/** Drops expired challenges (DNS-01 rows that still name a record are left to `expiredDnsChallenges`' caller). */
export async function deleteExpiredChallenges(db: Db, now: string): Promise<void> {
  await db
    .deleteFrom('acmeChallenges')
    .where('expiresAt', '<=', now)
    .where((eb) => eb.or([eb('kind', '!=', 'dns-01'), eb('recordId', 'is', null)]))
    .execute();
}

// ---------------------------------------------------------------- the instance's own certificates (free-domain wildcard)

export async function findInstanceCertificate(db: Db, domain: string): Promise<InstanceCertificateRow | undefined> {
  return db.selectFrom('instanceCertificates').selectAll().where('domain', '=', domain).executeTakeFirst();
}

export async function insertInstanceCertificate(db: Db, row: InstanceCertificateRow): Promise<void> {
  await db.insertInto('instanceCertificates').values(row).execute();
}

export async function updateInstanceCertificate(db: Db, domain: string, set: Updateable<InstanceCertificatesTable>): Promise<void> {
  await db.updateTable('instanceCertificates').set(set).where('domain', '=', domain).execute();
}

/** Like `setRenewal`, for an instance certificate. */
export async function setInstanceRenewal(db: Db, domain: string, seenUpdatedAt: string, set: { renewAt: string; renewalInfoAt: string | null }): Promise<void> {
  await db.updateTable('instanceCertificates').set(set).where('domain', '=', domain).where('updatedAt', '=', seenUpdatedAt).execute();
}

/** Like `claimAttempt`, for an instance certificate. */
export async function claimInstanceAttempt(db: Db, domain: string, seen: string | null, until: string): Promise<boolean> {
  let q = db.updateTable('instanceCertificates').set({ nextAttemptAt: until }).where('domain', '=', domain);
  q = seen === null ? q.where('nextAttemptAt', 'is', null) : q.where('nextAttemptAt', '=', seen);
  return Number((await q.executeTakeFirst()).numUpdatedRows) === 1;
}

/** The instance certificate of `domain` when it holds one (the edge's lookup). */
export async function servableInstanceCertificate(db: Db, domain: string): Promise<Pick<InstanceCertificateRow, 'domain' | 'certPem' | 'keySealed' | 'expiresAt' | 'updatedAt'> | undefined> {
  return db
    .selectFrom('instanceCertificates')
    .select(['domain', 'certPem', 'keySealed', 'expiresAt', 'updatedAt'])
    .where('domain', '=', domain)
    .where('certPem', 'is not', null)
    .where('keySealed', 'is not', null)
    .executeTakeFirst();
}
