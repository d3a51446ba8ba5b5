import { Type } from '@sinclair/typebox';
import { defineRoute } from '../../http/route.js';
import { Id, Obj, Str } from '../../http/schemas.js';
import { DeploymentSchema, EnvironmentDeletedSchema } from './deployments.presenters.js';
import { removePreviewEnvironment } from './previews.service.js';
import { promoteEnvironment } from './promote.service.js';

/** `:id` the project, `:env` an environment's name. */
const EnvParams = Obj({ id: Id, env: Str({ min: 1, max: 64 }) });

/** Preview environments' removal and promotion (contract section 16); listing and creating are the projects area's. */
export const environmentRoutes = [
  defineRoute({
    method: 'DELETE',
    url: '/api/projects/:id/environments/:env',
    summary: 'Remove a preview environment: its app stops, its releases, variables and volume go (production: 400)',
    tag: 'project:write',
    resource: { kind: 'project', param: 'id' },
    schema: { params: EnvParams, response: EnvironmentDeletedSchema },
    async handler({ params, actor, resource }, ctx) {
      await removePreviewEnvironment(ctx, actor, resource.record, params.env);
      return { name: params.env, deleted: true as const };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/environments/:env/promote',
    summary: "Make a ready preview deployment's build the production release, without a rebuild (202; default: the environment's current release)",
    tag: 'project:deployment:write',
    resource: { kind: 'project', param: 'id' },
    status: 202,
    schema: {
      params: EnvParams,
      // Optional: no body promotes the environment's current release.
      body: Type.Optional(Type.Union([Obj({ deploymentId: Type.Optional(Id) }), Type.Null()])),
      response: DeploymentSchema,
    },
    handler: ({ params, body, actor, resource }, ctx) => promoteEnvironment(ctx, actor, resource.record, params.env, body ?? {}),
  }),
];
