import type { ModuleDef } from '../../http/route.js';
import { ISSUE_JOB, RENEW_EVERY_MS, RENEW_TICKER, renewDueCertificates, runIssueJob } from './schedule.js';
import { createCertificatesState } from './certificates.state.js';
import { ServerCertificates } from './server-certificates.js';

/**
 * The certificates area (contract section 14): no routes; it declares and provides
 * `ctx.ports.certificates` (./ports.ts: what the edge's TLS listener and HTTP-01 answers read, what the
 * projects area calls when a domain is verified or removed), keeps its per-server state
 * (`ctx.state.certificates`), the issuing job, and the leader-only renewal ticker.
 */
export const certificatesModule: ModuleDef = {
  name: 'certificates',
  routes: [],
  state: () => ({ certificates: createCertificatesState() }),
  declares: { certificates: 'one' },
  provides: (ctx) => ({ certificates: new ServerCertificates(ctx) }),
  init(ctx) {
    ctx.jobs.register<{ domain: string }>(ISSUE_JOB, (payload) => runIssueJob(ctx, payload), { maxAttempts: 1 });
    ctx.scheduler.add({ name: RENEW_TICKER, everyMs: RENEW_EVERY_MS, run: async () => void (await renewDueCertificates(ctx)) });
  },
};
