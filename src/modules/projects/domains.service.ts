import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { isUniqueViolation, transaction, type Db } from '../../db/client.js';
import { AppError, conflict, invalid } from '../../lib/errors.js';
import { newId, nowIso, randomString } from '../../lib/ids.js';
import { insertAuditEvent } from '../audit/index.js';
import { lookupTxt } from './domain-dns.js';
import { challengeName, domainRecord, freeDomainOf, servingDomain, type DomainDeleted, type DomainRecord, type ProjectRecord } from './projects.presenters.js';
import { loadRecord } from './projects.service.js';
import * as store from './projects.store.js';
import * as domainsStore from './domains.store.js';
import type { DomainRow } from './domains.store.js';
import type { ProjectRow } from './projects.store.js';
import { normalizeHostname } from './validate.js';

/**
 * Custom domains of a project (contract section 12). A project claims a domain; the edge routes it
 * once the claim is verified: at once on an instance without verification (`BERTH_DOMAIN_VERIFICATION=none`,
 * the self-hosted default), else when the TXT record `_berth-challenge.<domain>` holds the claim's
 * value (`verify`). A domain is verified by at most one project on the instance; unverified claims
 * of several projects may coexist, so nobody can hold a name they cannot prove.
 */

/**
 * Validates a custom domain: IDNA to ASCII, no port, no wildcard, not under the apps domain (those
 * names are the free domains of projects).
 */
export function checkCustomDomain(ctx: AppContext, input: string, field = 'domain'): string {
  const domain = normalizeHostname(input, field);
  const apps = ctx.config.appsDomain.toLowerCase();
  if (domain === apps || domain.endsWith(`.${apps}`)) {
    throw invalid(field, `${field} must not be under ${apps}: those names are the free domains of projects`);
  }
  return domain;
}

/** A fresh claim's TXT value. */
export function newVerificationValue(): string {
  return `berth-verify=${randomString(32)}`;
}

/** The audit entry of a change to the project's domains, in the change's transaction. */
function auditDomain(tx: Db, actor: Actor, row: ProjectRow, action: string, details: Record<string, unknown>): Promise<void> {
  return insertAuditEvent(tx, { orgId: row.orgId, actorId: actor.userId, action, resourceType: 'project', resourceId: row.id, details });
}

const heldElsewhere = (domain: string) => conflict(`${domain} is already verified by another project on this instance`, 'domain');
const notHeld = (domain: string) => new AppError('NOT_FOUND', `this project has no domain ${domain}`, { field: 'domain' });

/** The domains' `tls` from the certificates area (its port); `none` without an HTTPS port or that area. */
async function tlsOf(ctx: AppContext, orgId: string, domains: readonly string[]): Promise<Map<string, DomainRecord['tls']>> {
  const port = ctx.ports.certificates;
  if (ctx.config.https.port === null || !port?.tls) return new Map();
  return port.tls(ctx, orgId, domains);
}

/** The answer for some of the project's claims, each with its `tls`. */
async function domainRecords(ctx: AppContext, orgId: string, rows: DomainRow[]): Promise<DomainRecord[]> {
  const tls = await tlsOf(ctx, orgId, rows.map((r) => r.domain));
  return rows.map((r) => domainRecord(r, tls.get(r.domain)));
}

/**
 * A claim became verified (or was added verified): its certificate is requested when the instance
 * serves HTTPS. After the commit; a failure to enqueue is logged (the certificates scheduler finds
 * verified domains without a certificate within a minute).
 */
async function certificateWanted(ctx: AppContext, claim: DomainRow): Promise<void> {
  if (ctx.config.https.port === null || claim.verifiedAt === null || !ctx.ports.certificates) return;
  try {
    await ctx.ports.certificates.requested(ctx, claim.orgId, claim.projectId, claim.domain);
  } catch (e) {
    ctx.log.error({ err: e, domain: claim.domain }, 'requesting the certificate failed; the scheduler retries');
  }
}

/** GET domains: the project's claims, oldest first. */
export async function listDomains(ctx: AppContext, row: ProjectRow): Promise<DomainRecord[]> {
  return domainRecords(ctx, row.orgId, await domainsStore.listDomains(ctx.db, row.orgId, row.id));
}

/**
 * Inserts the project's claim on `domain` inside `tx`: verified at once when the instance does not
 * verify domains. 409 when another project verified the domain.
 */
async function insertClaim(ctx: AppContext, tx: Db, row: ProjectRow, domain: string, primary: boolean, now: string): Promise<DomainRow> {
  const holder = await domainsStore.findVerifiedDomain(tx, domain);
  if (holder && holder.projectId !== row.id) throw heldElsewhere(domain);
  const claim: DomainRow = {
    id: newId('dom'),
    orgId: row.orgId,
    projectId: row.id,
    domain,
    isPrimary: 0,
    verification: newVerificationValue(),
    verifiedAt: ctx.config.domainVerification === 'none' ? now : null,
    createdAt: now,
  };
  await domainsStore.insertDomain(tx, claim);
  if (primary) await domainsStore.setPrimaryDomain(tx, row.orgId, row.id, domain);
  return { ...claim, isPrimary: primary ? 1 : 0 };
}

/** A unique violation on the domains table, told apart after the fact: this project's own claim, or another project's verified one. */
async function claimConflict(ctx: AppContext, row: ProjectRow, domain: string): Promise<AppError> {
  if (await domainsStore.findProjectDomain(ctx.db, row.orgId, row.id, domain)) return conflict(`this project already has the domain ${domain}`, 'domain');
  return heldElsewhere(domain);
}

function checkNotFreeDomain(ctx: AppContext, row: ProjectRow, domain: string): void {
  if (domain === freeDomainOf(ctx, row.slug)) throw invalid('domain', 'that is already the free domain of this project');
}

/** POST domains `{ domain, primary? }`: adds a claim (201). 409 when this project has it or another project verified it. */
export async function addDomain(ctx: AppContext, actor: Actor, row: ProjectRow, input: { domain: string; primary?: boolean }): Promise<DomainRecord> {
  const domain = checkCustomDomain(ctx, input.domain);
  checkNotFreeDomain(ctx, row, domain);
  const primary = input.primary === true;
  try {
    const claim = await transaction(ctx.db, async (tx) => {
      if (await domainsStore.findProjectDomain(tx, row.orgId, row.id, domain)) throw conflict(`this project already has the domain ${domain}`, 'domain');
      const now = nowIso();
      const claim = await insertClaim(ctx, tx, row, domain, primary, now);
      await store.updateProject(tx, row.orgId, row.id, { updatedAt: now });
      await auditDomain(tx, actor, row, 'project.domain.add', { domain, primary, verified: claim.verifiedAt !== null });
      return claim;
    });
    await certificateWanted(ctx, claim);
    return (await domainRecords(ctx, row.orgId, [claim]))[0]!;
  } catch (e) {
    if (isUniqueViolation(e)) throw await claimConflict(ctx, row, domain);
    throw e;
  }
}

/**
 * POST connect (seed): adds the domain when the project does not have it yet, and makes it the
 * primary one, in one transaction. Subject to verification like any claim: an unverified primary is
 * not served (the record's `primaryDomain` stays the free domain until it is verified).
 */
export async function connectDomain(ctx: AppContext, actor: Actor, row: ProjectRow, input: string): Promise<ProjectRecord> {
  const domain = checkCustomDomain(ctx, input);
  checkNotFreeDomain(ctx, row, domain);
  try {
    const added = await transaction(ctx.db, async (tx) => {
      const now = nowIso();
      const own = await domainsStore.findProjectDomain(tx, row.orgId, row.id, domain);
      const claim = own ?? (await insertClaim(ctx, tx, row, domain, true, now));
      if (own) await domainsStore.setPrimaryDomain(tx, row.orgId, row.id, domain);
      await store.updateProject(tx, row.orgId, row.id, { updatedAt: now });
      await auditDomain(tx, actor, row, 'project.domain.connect', { domain, added: !own, verified: claim.verifiedAt !== null });
      return own ? null : claim;
    });
    if (added) await certificateWanted(ctx, added);
  } catch (e) {
    if (isUniqueViolation(e)) throw await claimConflict(ctx, row, domain);
    throw e;
  }
  return loadRecord(ctx, ctx.db, row.orgId, row.id);
}

/**
 * DELETE domains/:domain: removes the project's claim (404 when it has none). When the primary
 * goes, no other domain is promoted: the free domain serves as primary until another is chosen.
 */
export async function removeDomain(ctx: AppContext, actor: Actor, row: ProjectRow, input: string): Promise<DomainDeleted> {
  const domain = checkCustomDomain(ctx, input);
  const answer = await transaction(ctx.db, async (tx) => {
    const own = await domainsStore.findProjectDomain(tx, row.orgId, row.id, domain);
    if (!own || (await domainsStore.deleteDomain(tx, row.orgId, row.id, domain)) === 0) throw notHeld(domain);
    await store.updateProject(tx, row.orgId, row.id, { updatedAt: nowIso() });
    await auditDomain(tx, actor, row, 'project.domain.remove', { domain, wasPrimary: own.isPrimary === 1, wasVerified: own.verifiedAt !== null });
    const rest = await domainsStore.listDomains(tx, row.orgId, row.id);
    return { domain, deleted: true as const, primaryDomain: servingDomain(ctx, row.slug, rest) };
  });
  // Its certificate goes too (after the commit; the certificates scheduler removes what this misses).
  try {
    await ctx.ports.certificates?.removed?.(ctx, row.orgId, row.id, domain);
  } catch (e) {
    ctx.log.error({ err: e, domain }, 'removing the certificate failed; the scheduler retries');
  }
  return answer;
}

/**
 * POST domains/:domain/verify: proves the project's claim. Already verified: nothing to do. Without
 * verification on this instance, the claim is verified at once; with `dns`, when a TXT record at
 * `_berth-challenge.<domain>` holds the claim's value. A failed check is a 400 naming `domain` that
 * says what was found; a domain another project verified first is 409.
 */
export async function verifyDomain(ctx: AppContext, actor: Actor, row: ProjectRow, input: string): Promise<DomainRecord> {
  const domain = checkCustomDomain(ctx, input);
  const own = await domainsStore.findProjectDomain(ctx.db, row.orgId, row.id, domain);
  if (!own) throw notHeld(domain);
  if (own.verifiedAt !== null) return (await domainRecords(ctx, row.orgId, [own]))[0]!;
  const holder = await domainsStore.findVerifiedDomain(ctx.db, domain);
  if (holder && holder.projectId !== row.id) throw heldElsewhere(domain);

  const method = ctx.config.domainVerification;
  if (method === 'dns') {
    const name = challengeName(domain);
    const found = await lookupTxt(ctx.config.dnsServers, name);
    const expected = `expected a TXT record at ${name} holding "${own.verification}"`;
    if (found.kind === 'missing') throw invalid('domain', `${domain} is not verified: there is no TXT record at ${name} (${expected})`);
    if (found.kind === 'failed') throw invalid('domain', `${domain} is not verified: the DNS lookup of ${name} failed: ${found.reason}; try again later`);
    if (!found.values.includes(own.verification)) {
      const shown = found.values.slice(0, 5).map((v) => JSON.stringify(v.length > 100 ? `${v.slice(0, 100)}...` : v));
      const more = found.values.length > 5 ? ` and ${found.values.length - 5} more` : '';
      throw invalid('domain', `${domain} is not verified: the TXT records at ${name} hold ${shown.join(', ')}${more}, not the value of this claim (${expected})`);
    }
  }

  try {
    const verified = await transaction(ctx.db, async (tx) => {
      const now = nowIso();
      const current = await domainsStore.findProjectDomain(tx, row.orgId, row.id, domain);
      if (!current) throw notHeld(domain);
      if (current.verifiedAt !== null) return current;
      await domainsStore.markDomainVerified(tx, row.orgId, row.id, domain, now);
      await store.updateProject(tx, row.orgId, row.id, { updatedAt: now });
      await auditDomain(tx, actor, row, 'project.domain.verify', { domain, method });
      return { ...current, verifiedAt: now };
    });
    await certificateWanted(ctx, verified);
    return (await domainRecords(ctx, row.orgId, [verified]))[0]!;
  } catch (e) {
    if (isUniqueViolation(e)) throw heldElsewhere(domain);
    throw e;
  }
}
