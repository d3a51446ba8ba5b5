import { Type } from '@sinclair/typebox';
import { DEPLOYMENTS_PORTS } from './ports.js';
import type { AppContext } from '../../context.js';
import { defineRoute, type ModuleDef, type ResolvedResource } from '../../http/route.js';
import { Id, IdParams, Obj, Str } from '../../http/schemas.js';
import { projectAuthz } from '../projects/index.js';
import { DeploymentSchema, DeploymentSessionSchema, IssuedTokenSchema } from './deployments.presenters.js';
import * as service from './deployments.service.js';
import * as store from './deployments.store.js';
import type { DeploymentRow } from './deployments.store.js';
import { environmentRoutes } from './environments.routes.js';
import { logRoutes } from './logs.routes.js';
import { rollbackProject } from './rollback.service.js';
import { deploymentSession, issueBuildToken, streamTokenPort } from './stream-tokens.service.js';

declare module '../../http/route.js' {
  interface ResourceKinds {
    deployment: DeploymentRow;
  }
}

/** Resolver of kind `deployment`: the deployment's project grant keys cover it; its parent is that project. */
async function resolveDeployment(ctx: AppContext, orgId: string, id: string): Promise<ResolvedResource<'deployment'> | null> {
  const d = await store.findDeployment(ctx.db, orgId, id);
  if (!d) return null;
  const project = projectAuthz.ref({ id: d.projectId, orgId: d.orgId });
  return { ...project, kind: 'deployment', id: d.id, record: d, parents: { project } };
}

/** The project's history: how many, and of which environment or status. */
const DeploymentsQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
  environment: Type.Optional(Str({ min: 1, max: 63 })),
  status: Type.Optional(Str({ min: 1, max: 32 })),
});

const deploymentRoutes = [
  defineRoute({
    method: 'POST',
    url: '/api/deployments',
    summary: 'Create a deployment: build the project source and run it (202)',
    tag: 'project:deployment:write',
    resource: { kind: 'project', body: 'projectId' },
    status: 202,
    schema: {
      body: Obj({
        projectId: Id,
        environment: Type.Optional(Str({ min: 1, max: 64 })),
        ref: Type.Optional(Str({ min: 1, max: 255, pattern: '^(?!-)[^\\s\\x00-\\x1f~^:?*\\[\\\\]+$' })),
        sessionId: Type.Optional(Id),
        noCache: Type.Optional(Type.Boolean({ description: "Build without the project's build cache: nothing restored, nothing saved (contract section 21)" })),
      }),
      response: DeploymentSchema,
    },
    handler: ({ body, actor, resource }, ctx) => service.deployProject(ctx, actor, resource.record, body),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/deployments/build/access',
    summary: 'Mint a read-only token for one deployment\'s build logs',
    tag: 'project:deployment:read',
    resource: { kind: 'deployment', body: 'deploymentId' },
    schema: { body: Obj({ deploymentId: Id }), response: IssuedTokenSchema },
    handler: ({ actor, resource }, ctx) => issueBuildToken(ctx, actor, resource.record),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/deployments/:id',
    summary: 'Get a deployment',
    tag: 'project:deployment:read',
    resource: { kind: 'deployment', param: 'id' },
    schema: { params: IdParams, response: DeploymentSchema },
    handler: ({ resource }) => service.deploymentRecord(resource.record),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/deployments/:id/cancel',
    summary: 'Cancel a queued or running deployment (kills its build)',
    tag: 'project:deployment:write',
    resource: { kind: 'deployment', param: 'id' },
    schema: { params: IdParams, response: DeploymentSchema },
    handler: ({ actor, resource }, ctx) => service.cancelDeployment(ctx, actor, resource.record),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/rollback',
    summary: "Roll an environment back to a kept ready deployment, without a build (202; default: production's release before the current one)",
    tag: 'project:deployment:write',
    resource: { kind: 'project', param: 'id' },
    status: 202,
    schema: {
      params: IdParams,
      // Optional: no body rolls production back to the release before its current one.
      body: Type.Optional(Type.Union([Obj({ deploymentId: Type.Optional(Id) }), Type.Null()])),
      response: DeploymentSchema,
    },
    handler: ({ body, actor, resource }, ctx) => rollbackProject(ctx, actor, resource.record, body ?? {}),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/deployments',
    summary: "List the project's deployments, newest first",
    tag: 'project:deployment:list',
    resource: { kind: 'project', param: 'id' },
    schema: { params: IdParams, querystring: DeploymentsQuery, response: Type.Array(DeploymentSchema) },
    handler: ({ query, resource }, ctx) => service.listProjectDeployments(ctx, resource.record, query),
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/deployment-session',
    summary: 'Open a read-only session on the project\'s latest deployment (build-log token)',
    tag: 'project:read',
    resource: { kind: 'project', param: 'id' },
    schema: { params: IdParams, response: DeploymentSessionSchema },
    handler: ({ resource, actor }, ctx) => deploymentSession(ctx, actor, resource.record),
  }),
];

/**
 * Deployments: their records, history, rollbacks, promotions, previews, logs and streams. Building
 * and running them is this server's host's (the hosting area, reached through `ctx.ports.runtimeHost`).
 */
export const deploymentsModule: ModuleDef = {
  name: 'deployments',
  resolvers: { deployment: resolveDeployment },
  declares: DEPLOYMENTS_PORTS,
  provides() {
    return {
      streamTokens: streamTokenPort,
      // A project's deployments as its info and commit status read them (the projects area's reads).
      deploymentHistory: { latest: store.latestDeployment },
      // A project's deployments are previewed and removed with it (the projects area's DELETE).
      projectDependents: [
        {
          name: 'deployments',
          async preview(db, orgId, projectId) {
            const names = await store.deploymentIdsOfProject(db, orgId, projectId);
            return { count: names.length, names };
          },
          remove: (tx, orgId, projectId) => store.deleteProjectDeployments(tx, orgId, projectId),
        },
      ],
    };
  },
  routes: [...deploymentRoutes, ...environmentRoutes, ...logRoutes],
};
