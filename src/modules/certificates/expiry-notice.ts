import type { AppContext } from '../../context.js';
import { notifyEvent } from '../notifications/index.js';
import * as store from './certificates.store.js';
import type { CertificateRow } from './certificates.store.js';

/**
 * certificate.expiring (contract section 20): a project's certificate that expires within this many days
 * has not been renewed in time (renewal starts at two thirds of the lifetime, ~30 days before a 90-day
 * certificate ends), so people are told, once per certificate.
 */
export const EXPIRING_WITHIN_DAYS = 14;

type Row = Pick<CertificateRow, 'orgId' | 'projectId' | 'domain' | 'status' | 'expiresAt' | 'expiryNoticedFor'>;

/** Tells the org's channels about a certificate close to its end, unless it was told for this one already. */
export async function noticeExpiring(ctx: AppContext, row: Row, nowMs: number): Promise<boolean> {
  if (!row.expiresAt || row.expiryNoticedFor === row.expiresAt) return false;
  const left = Date.parse(row.expiresAt) - nowMs;
  if (!(left <= EXPIRING_WITHIN_DAYS * 86_400_000)) return false;
  // One instance's pass wins the mark; the others say nothing.
  if (!(await store.markExpiryNoticed(ctx.db, row.orgId, row.domain, row.expiresAt))) return false;
  const days = Math.max(0, Math.floor(left / 86_400_000));
  await notifyEvent(ctx, {
    orgId: row.orgId,
    event: 'certificate.expiring',
    projectId: row.projectId,
    subject: left <= 0 ? `The HTTPS certificate for ${row.domain} has expired` : `The HTTPS certificate for ${row.domain} expires in ${days} day${days === 1 ? '' : 's'}`,
    detail: `It ends at ${row.expiresAt} and has not been renewed${row.status === 'failed' ? ' (the last renewal attempt failed)' : ''}. Berth keeps trying; check the domain's DNS and the certificate's error in the dashboard's Domains tab.`,
    url: `https://${row.domain}/`,
  });
  return true;
}
