import type { AppContext } from '../../context.js';
import { clockIso } from '../../lib/clock.js';
import { projectQueries } from '../projects/index.js';
import * as store from './certificates.store.js';
import { renewalSchedule, twoThirdsOfLifetime } from './ari.js';
import { dnsProviderFor, freeDomainWildcard } from './dns.js';
import { noticeExpiring } from './expiry-notice.js';
import { ensureInstanceRow, ensureRow, issueCertificate, issueFreeDomainWildcard } from './issue.service.js';

/**
 * When certificates are requested (contract section 14): at once when a domain becomes verified
 * (the projects area calls `ctx.ports.certificates.requested`), and by a leader-only ticker every
 * minute for verified domains without a certificate, issued certificates whose renewal time
 * (`renewAt`: ARI's window when the CA offers it, else two thirds of the lifetime; `ari.ts`) has
 * passed, and failed ones whose backoff ran out. The same pass asks the CA's renewal information
 * again for certificates whose Retry-After (`renewalInfoAt`) has passed, and fills in the renewal
 * time of certificates issued before it was kept. Each attempt is one job (`certificates.issue`, claimed once);
 * `nextAttemptAt` is moved ahead while it is queued so that no second job is enqueued for it.
 * With a DNS provider (and no wildcard files), the same pass keeps the free domains' wildcard
 * certificate `*.<BERTH_APPS_DOMAIN>` (the instance's own row; DNS-01), and removes DNS-01 records an
 * order could not remove (a crash, a provider outage).
 */

export const ISSUE_JOB = 'certificates.issue';
export const RENEW_TICKER = 'certificates.renew';
export const RENEW_EVERY_MS = 60_000;
/** At most this many certificates' renewal information is fetched in one pass (the rest wait for the next, a minute later). */
const POLLS_PER_PASS = 25;
/** While a job is queued or running, the row's next attempt is held this far ahead (a lost job is retried after it). */
const IN_FLIGHT_MS = 15 * 60_000;

/** Enqueues an attempt for the row unless one is already queued (the row's `nextAttemptAt` moved from `seen`). */
async function enqueueAttempt(ctx: AppContext, orgId: string, domain: string, seen: string | null): Promise<boolean> {
  const until = clockIso(ctx.clock, IN_FLIGHT_MS);
  if (!(await store.claimAttempt(ctx.db, orgId, domain, seen, until))) return false;
  await ctx.jobs.enqueue(ISSUE_JOB, { domain }, { orgId, maxAttempts: 1 });
  return true;
}

/** `requested`: the domain's row (pending when new) and an attempt now. Nothing without an HTTPS port. */
export async function certificateRequested(ctx: AppContext, orgId: string, projectId: string, domain: string): Promise<void> {
  if (ctx.config.https.port === null) return;
  const row = await ensureRow(ctx, orgId, projectId, domain);
  const renewAt = row.renewAt ?? (row.certPem ? twoThirdsOfLifetime(row.certPem).toISOString() : null);
  const now = clockIso(ctx.clock);
  if (row.status === 'issued' && renewAt !== null && renewAt > now) return;
  const inFlight = row.nextAttemptAt !== null && row.nextAttemptAt > now && row.status === 'pending';
  if (!inFlight) await enqueueAttempt(ctx, orgId, domain, row.nextAttemptAt);
}

/** `removed`: the project's domain went, and its certificate with it. */
export async function certificateRemoved(ctx: AppContext, orgId: string, projectId: string, domain: string): Promise<void> {
  const row = await store.findCertificate(ctx.db, orgId, domain);
  if (row && row.projectId === projectId) await store.deleteCertificate(ctx.db, orgId, domain);
}

/** The job: one attempt. A failure is recorded on the row (and retried by the ticker), so the job itself succeeds. */
export async function runIssueJob(ctx: AppContext, payload: { domain: string }): Promise<void> {
  if (payload.domain.startsWith('*.')) await issueFreeDomainWildcard(ctx);
  else await issueCertificate(ctx, payload.domain);
}

/** What the pass reads of a row to decide whether its issued certificate is due. */
interface Schedule {
  status: string;
  expiresAt: string | null;
  renewAt: string | null;
  renewalInfoAt: string | null;
  updatedAt: string;
}

/** How the pass reaches one row: its certificate, and a write of its renewal time unless the row changed since it was read. */
interface ScheduleAccess {
  certPem(): Promise<string | null>;
  save(seenUpdatedAt: string, set: { renewAt: string; renewalInfoAt: string | null }): Promise<void>;
}

/**
 * Whether an issued certificate is due for renewal. First, within the pass's budget, its renewal time
 * is refreshed when the CA's Retry-After has passed (ARI) or when it has none yet (issued before
 * migration 028); the write is skipped when the row changed meanwhile (a new certificate's schedule
 * is not overwritten with the old one's). Without a renewal time, only an expired certificate is due.
 */
async function renewalDue(ctx: AppContext, row: Schedule, now: string, access: ScheduleAccess, budget: { polls: number }): Promise<boolean> {
  if (row.status !== 'issued') return false;
  let renewAt = row.renewAt;
  const ask = renewAt === null || (row.renewalInfoAt !== null && row.renewalInfoAt <= now && renewAt > now);
  if (ask && budget.polls > 0) {
    budget.polls--;
    const pem = await access.certPem();
    if (pem) {
      const next = await renewalSchedule(ctx, pem, row.renewAt);
      await access.save(row.updatedAt, next);
      renewAt = next.renewAt;
    }
  }
  if (renewAt === null) return row.expiresAt === null || row.expiresAt <= now;
  return renewAt <= now;
}

/** The free-domain wildcard's attempt when it is due (none yet, failed and backed off, or its renewal time passed). */
async function keepFreeDomainWildcard(ctx: AppContext, now: string, budget: { polls: number }): Promise<string | null> {
  const domain = freeDomainWildcard(ctx);
  if (!domain) return null;
  const row = await ensureInstanceRow(ctx, domain);
  const due = row.nextAttemptAt === null || row.nextAttemptAt <= now;
  if (!due) return null;
  const access: ScheduleAccess = {
    certPem: async () => row.certPem,
    save: (seen, set) => store.setInstanceRenewal(ctx.db, domain, seen, set),
  };
  const wanted = row.status === 'pending' || row.status === 'failed' || (await renewalDue(ctx, row, now, access, budget));
  if (!wanted) return null;
  const until = clockIso(ctx.clock, IN_FLIGHT_MS);
  if (!(await store.claimInstanceAttempt(ctx.db, domain, row.nextAttemptAt, until))) return null;
  await ctx.jobs.enqueue(ISSUE_JOB, { domain }, { maxAttempts: 1 });
  return domain;
}

/** Removes the DNS-01 records of expired challenge rows (an order that crashed or could not remove its record). */
async function removeLeftoverRecords(ctx: AppContext, now: string): Promise<void> {
  const leftovers = await store.expiredDnsChallenges(ctx.db, now);
  if (leftovers.length === 0) return;
  const provider = dnsProviderFor(ctx);
  for (const row of leftovers) {
    if (!provider) {
      // No provider any more: nothing can remove it; forget the row.
      await store.deleteChallenge(ctx.db, row.token);
      continue;
    }
    try {
      await provider.removeTxt(row.recordName!, row.recordId!);
      await store.deleteChallenge(ctx.db, row.token);
    } catch (e) {
      ctx.log.warn({ record: row.recordName, reason: (e as Error).message }, 'a leftover DNS-01 record could not be removed; the next pass retries');
    }
  }
}

/**
 * The ticker's pass: requests certificates of verified domains that have none, tells the org's
 * channels of one close to its end (certificate.expiring, expiry-notice.ts), renews those whose
 * renewal time passed (asking the CA's renewal information again first when it is due), retries
 * failed ones whose backoff ran out, removes the certificates of
 * domains no project verifies any more, and drops expired challenges. Answers what it enqueued.
 */
export async function renewDueCertificates(ctx: AppContext): Promise<{ enqueued: string[]; removed: string[] }> {
  const enqueued: string[] = [];
  const removed: string[] = [];
  const now = clockIso(ctx.clock);
  await store.deleteExpiredChallenges(ctx.db, now);
  await removeLeftoverRecords(ctx, now);
  if (ctx.config.https.port === null) return { enqueued, removed };
  const verified = new Map((await projectQueries.verifiedDomainsAnyOrg(ctx.db)).map((d) => [d.domain, d]));
  const rows = await store.certificateSchedulesAnyOrg(ctx.db);
  const held = new Set<string>();
  const budget = { polls: POLLS_PER_PASS };
  for (const row of rows) {
    const owner = verified.get(row.domain);
    if (!owner || owner.orgId !== row.orgId || owner.projectId !== row.projectId) {
      await store.deleteCertificate(ctx.db, row.orgId, row.domain);
      ctx.ports.certificates?.invalidate?.(row.domain);
      removed.push(row.domain);
      continue;
    }
    held.add(row.domain);
    await noticeExpiring(ctx, row, ctx.clock.now());
    const due = row.nextAttemptAt === null || row.nextAttemptAt <= now;
    if (!due) continue;
    const access: ScheduleAccess = {
      certPem: async () => (await store.findCertificate(ctx.db, row.orgId, row.domain))?.certPem ?? null,
      save: (seen, set) => store.setRenewal(ctx.db, row.orgId, row.domain, seen, set),
    };
    const wanted = row.status === 'pending' || row.status === 'failed' || (await renewalDue(ctx, row, now, access, budget));
    if (wanted && (await enqueueAttempt(ctx, row.orgId, row.domain, row.nextAttemptAt))) enqueued.push(row.domain);
  }
  for (const d of verified.values()) {
    if (held.has(d.domain)) continue;
    await certificateRequested(ctx, d.orgId, d.projectId, d.domain);
    enqueued.push(d.domain);
  }
  const wildcard = await keepFreeDomainWildcard(ctx, now, budget);
  if (wildcard) enqueued.push(wildcard);
  return { enqueued, removed };
}
