import type { MatrixRow } from '../matrix.js';

/** Metrics (contract section 20): a project's series follow project:read; the Prometheus text needs audit:read. */
export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/projects/:id/metrics', fixture: 'project' },
  { method: 'GET', path: '/api/metrics' },
];
