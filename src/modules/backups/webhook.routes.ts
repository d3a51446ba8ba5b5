import { AppError } from '../../lib/errors.js';
import { Answer, defineRoute } from '../../http/route.js';
import { RunStarted } from './backups.presenters.js';
import { backupsRuntime } from './backups.runtime.js';
import { triggerRun } from './runs.service.js';
import { WEBHOOK_NOT_FOUND, webhookPolicy } from './webhook.service.js';

/** The inbound backup webhook: public at the gate, the per-policy token is the credential. */

export const webhookRoutes = [
  defineRoute({
    method: 'POST',
    url: '/api/webhooks/backup',
    summary: 'Trigger a backup with the per-policy webhook token (Authorization: Bearer <token>)',
    access: 'public',
    bodyLimit: 64 * 1024,
    statuses: [201],
    // 201 with the new run, 200 with the run already in flight; every failure is the same opaque 404.
    schema: { response: RunStarted },
    async handler({ req }, ctx) {
      const wait = backupsRuntime(ctx).webhookLimiter.hit(req.ip);
      if (wait > 0) throw new AppError('RATE_LIMITED', 'too many webhook requests from this address', { retryAfterSeconds: wait });
      const policy = await webhookPolicy(ctx, req.headers.authorization).catch(() => null);
      if (!policy) return new Answer(WEBHOOK_NOT_FOUND, 404);
      const out = await triggerRun(ctx, policy, 'webhook');
      return new Answer({ data: { runId: out.runId } }, out.created ? 201 : 200);
    },
  }),
];
