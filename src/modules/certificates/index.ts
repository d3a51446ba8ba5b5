/**
 * The certificates area's surface (contract section 14). Other areas reach its work through
 * `ctx.ports.certificates` (./ports.ts); the module, and the two entry points tests and the CLI
 * may drive directly, are exported here.
 */
export { certificatesModule } from './certificates.module.js';
/** The port's types (the edge's fakes in tests implement it). */
export type { CertificatesPort, DomainTls } from './ports.js';
export { issueCertificate, issueFreeDomainWildcard, type IssueOutcome, type IssueOptions } from './issue.service.js';
export { renewDueCertificates } from './schedule.js';
