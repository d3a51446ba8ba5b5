import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { DeletedSchema, RouteRuleSchema } from './config.presenters.js';
import { ProjectParams, RuleCreateBody, RuleParams, RulePatchBody } from './projects.schemas.js';
import * as rules from './route-rules.service.js';

const P = { kind: 'project', param: 'id' } as const;

/** Edge route rules: self-hosted only (404 in cloud mode). */
export const routeRuleRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/route-rules',
    summary: 'List edge route rules',
    tag: 'project:read',
    resource: P,
    selfHostedOnly: true,
    schema: { params: ProjectParams, response: Type.Array(RouteRuleSchema) },
    async handler({ resource }, ctx) {
      return rules.listRules(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/route-rules',
    summary: 'Create a route rule (rate-limit, ban or allow-deny)',
    tag: 'project:write',
    resource: P,
    selfHostedOnly: true,
    status: 201,
    schema: { params: ProjectParams, body: RuleCreateBody, response: RouteRuleSchema },
    async handler({ actor, body, resource }, ctx) {
      return rules.createRule(ctx, actor, resource.record, body);
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/api/projects/:id/route-rules/:ruleId',
    summary: 'Update a route rule',
    tag: 'project:write',
    resource: P,
    selfHostedOnly: true,
    schema: { params: RuleParams, body: RulePatchBody, response: RouteRuleSchema },
    async handler({ actor, body, params, resource }, ctx) {
      return rules.updateRule(ctx, actor, resource.record, params.ruleId, body);
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/api/projects/:id/route-rules/:ruleId',
    summary: 'Delete a route rule',
    tag: 'project:write',
    resource: P,
    selfHostedOnly: true,
    schema: { params: RuleParams, response: DeletedSchema },
    async handler({ actor, params, resource }, ctx) {
      return rules.deleteRule(ctx, actor, resource.record, params.ruleId);
    },
  }),
];
