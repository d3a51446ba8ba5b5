import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { Obj, Id } from '../../http/schemas.js';
import { prometheusText, projectMetrics } from './metrics.service.js';
import { MetricsAnswerSchema } from './metrics.presenters.js';

const Time = Type.String({ minLength: 1, maxLength: 40, description: 'ISO 8601 time or epoch seconds' });

/** Metrics (contract section 20): a project's series, and the org's latest points for Prometheus. */
export const metricsRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/metrics',
    summary: "The project's apps' and services' CPU, memory, network, disk and requests over a range (from, to, step: 10, 60 or 3600 s)",
    tag: 'project:read',
    resource: { kind: 'project', param: 'id' },
    schema: { params: Obj({ id: Id }), querystring: Obj({ from: Type.Optional(Time), to: Type.Optional(Time), step: Type.Optional(Type.Integer()) }), response: MetricsAnswerSchema },
    handler: ({ query, resource }, ctx) => projectMetrics(ctx, resource.record, query),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/metrics',
    summary: "The org's latest metrics in the Prometheus text format (for a scraper's token with audit:read)",
    tag: 'audit:read',
    raw: true,
    produces: 'text/plain',
    handler: async ({ actor, reply }, ctx) => {
      const text = await prometheusText(ctx, actor);
      return reply.header('content-type', 'text/plain; version=0.0.4; charset=utf-8').header('cache-control', 'no-store').send(text);
    },
  }),
];
