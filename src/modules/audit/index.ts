/**
 * The audit area's surface: other areas record events with `insertAuditEvent` (inside the transaction
 * of the write they describe); the module serves `GET /api/audit`.
 */
export { auditModule } from './audit.routes.js';
export { auditEventRow, auditInsertStep, insertAuditEvent, insertAuditRow, type AuditInput, type AuditRow } from './audit.store.js';
