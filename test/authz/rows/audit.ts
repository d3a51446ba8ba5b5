import type { MatrixRow } from '../matrix.js';

/** audit:read: owner and admin (a restricted member needs a grant on `audit` `*`, not given here). */
export const rows: MatrixRow[] = [{ method: 'GET', path: '/api/audit', query: 'limit=5' }];
