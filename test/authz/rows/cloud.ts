import { byGrant, PRINCIPALS, type MatrixRow, type PrincipalName } from '../matrix.js';

/**
 * Cloud area (docs/cloud.md). The matrix server is a self-hosted instance without a cloud link:
 * - the transfers are project:admin; to-cloud then answers 503 `cloud_unreachable` (no link) to
 *   those allowed, to-self-hosted 409 (the project is already here);
 * - the cloud-only routes (import-bundle, export, source-archive, transfer-data, the cloud upload target, the
 *   lookup of a backup record's or a deployment's project) do not exist here: 404 to everyone,
 *   before authentication, as self-hosted-only routes are on a cloud.
 */
const everyone404 = Object.fromEntries(PRINCIPALS.map((p) => [p, 404])) as Record<PrincipalName, number>;
const admins = byGrant('admin');
const noLink = Object.fromEntries(admins.map((p) => [p, 503])) as Partial<Record<PrincipalName, number>>;
const noTransfer = Object.fromEntries(admins.map((p) => [p, 404])) as Partial<Record<PrincipalName, number>>;

export const rows: MatrixRow[] = [
  { method: 'POST', path: '/api/projects/:id/transfer/to-cloud', fixture: 'project', expect: noLink },
  { method: 'POST', path: '/api/projects/:id/transfer/to-self-hosted', fixture: 'project', note: '409 for a local project' },
  { method: 'POST', path: '/api/projects/:id/transfers', fixture: 'project', body: { to: 'cloud', includeData: true }, expect: noLink, note: 'a background transfer (test/cloud/transfers-background.test.ts)' },
  { method: 'GET', path: '/api/projects/:id/transfers/:transferId', fixture: 'project', params: { transferId: 'xfr_matrix00000000000000' }, expect: noTransfer, note: 'no such transfer: 404 to those allowed' },
  { method: 'GET', path: '/api/projects/:id/transfers/:transferId/events', fixture: 'project', params: { transferId: 'xfr_matrix00000000000000' }, expect: noTransfer, note: 'no such transfer: 404 to those allowed' },
  { method: 'POST', path: '/api/projects/import-bundle', body: { bundle: {} }, allow: [], expect: everyone404, note: 'cloud only' },
  { method: 'POST', path: '/api/projects/:id/export', fixture: 'project', body: {}, allow: [], expect: everyone404, otherOrg: 404, note: 'cloud only' },
  { method: 'POST', path: '/api/projects/:id/source-archive', fixture: 'project', body: {}, allow: [], expect: everyone404, note: 'cloud only' },
  { method: 'GET', path: '/api/projects/:id/source-archive', fixture: 'project', allow: [], expect: everyone404, note: 'cloud only' },
  { method: 'POST', path: '/api/projects/:id/transfer-data/:name', fixture: 'project', params: { name: 'db' }, body: {}, allow: [], expect: everyone404, note: 'cloud only (test/cloud/services-transfer.test.ts covers it on a cloud)' },
  { method: 'GET', path: '/api/projects/:id/transfer-data/:name', fixture: 'project', params: { name: 'db' }, allow: [], expect: everyone404, note: 'cloud only' },
  { method: 'GET', path: '/api/cloud/refs/:kind/:id', params: { kind: 'run', id: 'bkr_matrix00000000000000' }, allow: [], expect: everyone404, note: 'cloud only (test/cloud/backups.test.ts and deployments.test.ts cover it on a cloud)' },
  { method: 'POST', path: '/api/uploads/:sessionId', params: { sessionId: 'upl_matrix000000000000000' }, body: {}, allow: [], expect: everyone404, note: 'cloud only' },
];
