import { Type } from '@sinclair/typebox';
import { Answer, defineRoute } from '../../http/route.js';
import { Id, Nullable, Obj, Str } from '../../http/schemas.js';
import { Deleted, Policy, RunStarted } from './backups.presenters.js';
import * as svc from './policies.service.js';
import { manualRun } from './runs.service.js';

/**
 * Routes of backup policies: a project's list and create (`project:write` on the project), and one
 * policy's update, delete and manual run, which also need write (admin for delete) on the policy's
 * project (seed "Authentication" 5).
 */

const Retain = {
  retainCount: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 10000 }))),
  retainDays: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 36500 }))),
};
const Schedule = {
  cronExpression: Type.Optional(Nullable(Str({ min: 1, max: 200 }))),
  timezone: Type.Optional(Str({ min: 1, max: 64 })),
};
const PolicyCreate = Obj({
  destinationId: Id,
  serviceId: Type.Optional(Id),
  ...Schedule,
  ...Retain,
  enabled: Type.Optional(Type.Boolean()),
  enableWebhook: Type.Optional(Type.Boolean()),
  verifyRestore: Type.Optional(Type.Boolean()),
});
/** The allow-list of policy updates: projectId, serviceId and createdBy are not in it (dropped). */
const PolicyPatch = Obj({
  destinationId: Type.Optional(Id),
  ...Schedule,
  ...Retain,
  enabled: Type.Optional(Type.Boolean()),
  enableWebhook: Type.Optional(Type.Boolean()),
  rotateWebhookToken: Type.Optional(Type.Boolean()),
  verifyRestore: Type.Optional(Type.Boolean()),
});

const ProjectParams = Obj({ projectId: Id });
const PolicyParams = Obj({ policyId: Id });
const project = { kind: 'project', param: 'projectId' } as const;
const policy = { kind: 'backup_policy', param: 'policyId' } as const;

export const policyRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/projects/:projectId/backup-policies',
    summary: 'List backup policies of a project',
    tag: 'project:write',
    resource: project,
    schema: { params: ProjectParams, response: Type.Array(Policy) },
    handler: ({ resource }, ctx) => svc.listPolicies(ctx, resource),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:projectId/backup-policies',
    summary: 'Create a backup policy',
    tag: 'project:write',
    resource: project,
    status: 201,
    schema: { params: ProjectParams, body: PolicyCreate, response: Policy },
    handler: ({ actor, resource, body }, ctx) => svc.createPolicy(ctx, actor, resource, body),
  }),
  defineRoute({
    method: 'PATCH',
    url: '/api/backup-policies/:policyId',
    summary: 'Update a backup policy (allow-listed fields)',
    tag: 'backup_destination:backup_policy:write',
    requires: [{ tag: 'project:write', on: 'project' }],
    resource: policy,
    schema: { params: PolicyParams, body: PolicyPatch, response: Policy },
    handler: ({ actor, resource, body }, ctx) => svc.updatePolicy(ctx, actor, resource.record, body ?? {}),
  }),
  defineRoute({
    method: 'DELETE',
    url: '/api/backup-policies/:policyId',
    summary: 'Delete a backup policy (needs admin on the project)',
    tag: 'backup_destination:backup_policy:write',
    requires: [{ tag: 'project:admin', on: 'project' }],
    resource: policy,
    schema: { params: PolicyParams, response: Deleted },
    handler: ({ actor, resource }, ctx) => svc.deletePolicy(ctx, actor, resource.record),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/backup-policies/:policyId/run',
    summary: 'Trigger a backup now (201 with the new run, 200 with the run already in flight)',
    tag: 'backup_destination:backup_policy:write',
    requires: [{ tag: 'project:write', on: 'project' }],
    resource: policy,
    statuses: [201],
    schema: { params: PolicyParams, response: RunStarted },
    async handler({ resource }, ctx) {
      const out = await manualRun(ctx, resource.record);
      return new Answer({ data: { runId: out.runId } }, out.created ? 201 : 200);
    },
  }),
];
