import type { MatrixRow } from '../matrix.js';

export const rows: MatrixRow[] = [
  { method: 'GET', path: '/api/health' },
  { method: 'GET', path: '/api/openapi.json' },
];
