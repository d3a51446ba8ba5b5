import { Type } from '@sinclair/typebox';
import { Answer, defineRoute, JsonText, type ModuleDef } from '../../http/route.js';
import { configRoutes } from './config.routes.js';
import { domainRoutes } from './domains.routes.js';
import * as deletion from './deletion.service.js';
import * as environments from './environments.service.js';
import * as info from './info.service.js';
import * as lifecycle from './lifecycle.service.js';
import {
  DeletedProjectSchema,
  DeletionPreviewSchema,
  EnvironmentSchema,
  HomeSchema,
  InfoSchema,
  OptionsSchema,
  ProjectSchema,
  RoutingAttemptSchema,
} from './projects.presenters.js';
import { CreateBody, EnsureBody, EnvironmentBody, OptionsBody, ProjectParams, UpdateBody } from './projects.schemas.js';
import * as projects from './projects.service.js';
import { findProject, projectCatalog } from './projects.store.js';
import { resolveProject } from './projects.resolvers.js';
import { ProjectReads } from './project-reads.js';
import { PROJECTS_PORTS } from './ports.js';
import { routeRuleRoutes } from './route-rules.routes.js';

const P = { kind: 'project', param: 'id' } as const;

/** Projects: CRUD, ensure, lifecycle, deletion, environments (config.routes.ts: the rest; the services area: services). */
const coreRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/projects',
    summary: 'List the projects of the org the caller can read',
    tag: 'project:list',
    schema: { response: Type.Array(ProjectSchema) },
    async handler({ actor }, ctx) {
      return projects.listProjects(ctx, actor);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects',
    summary: 'Create a project (records its config only; no build starts)',
    tag: 'project:write',
    status: 201,
    schema: { body: CreateBody, response: ProjectSchema },
    async handler({ actor, body }, ctx) {
      return projects.createProject(ctx, actor, body);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/home',
    summary: 'Home feed: local (and, when linked, cloud) projects',
    tag: 'project:list',
    schema: { response: HomeSchema },
    async handler({ actor }, ctx) {
      return projects.home(ctx, actor);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/ensure',
    summary: 'Create a project, or update `projectId` in place (folder-upload step 3)',
    // project:write on the body's `projectId` (404 another org's or missing, 403 not allowed), or on
    // the org when it names none (a new project).
    tag: 'project:write',
    resource: { kind: 'project', body: 'projectId', optional: true },
    statuses: [201],
    schema: { body: EnsureBody, response: ProjectSchema },
    async handler({ actor, body, resource }, ctx) {
      const out = await projects.ensureProject(ctx, actor, resource?.record, body);
      // 201 when it created the project, 200 when it updated one (same body, `{ data: project }`).
      return out.created ? new Answer({ data: out.project }, 201) : out.project;
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id',
    summary: 'Get a project: config, source, routes, status',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: ProjectSchema },
    // Written once per row and routes the server's reads hand out (getProjectJson), not on every request.
    handler({ resource, reply }, ctx) {
      const json = projects.getProjectJson(ctx, resource.record, (record) => String(reply.serialize({ data: record })));
      return typeof json === 'string' ? new JsonText(json) : json.then((text) => new JsonText(text));
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/api/projects/:id',
    summary: 'Update configuration (partial: send only the fields to change)',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: UpdateBody, response: ProjectSchema },
    async handler({ actor, body, resource }, ctx) {
      return projects.updateProjectConfig(ctx, actor, resource.record, body);
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/api/projects/:id',
    summary: 'Delete a project and everything the deletion preview lists',
    tag: 'project:admin',
    resource: P,
    schema: { params: ProjectParams, response: DeletedProjectSchema },
    async handler({ actor, resource }, ctx) {
      return deletion.deleteProject(ctx, actor, resource.record);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/info',
    summary: 'Detailed info: runtime, build, source',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: InfoSchema },
    async handler({ resource }, ctx) {
      return info.info(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/deletion-preview',
    summary: 'What deleting the project would remove (counts and names)',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: DeletionPreviewSchema },
    async handler({ resource }, ctx) {
      return deletion.deletionPreview(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/environments',
    summary: 'List environments (production and previews)',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: Type.Array(EnvironmentSchema) },
    async handler({ resource }, ctx) {
      return environments.listEnvironments(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/environments',
    summary: 'Create a preview environment',
    tag: 'project:write',
    resource: P,
    status: 201,
    schema: { params: ProjectParams, body: EnvironmentBody, response: EnvironmentSchema },
    async handler({ actor, body, resource }, ctx) {
      return environments.createEnvironment(ctx, actor, resource.record, body);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/options',
    summary: 'Set build/deploy options',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: OptionsBody, response: OptionsSchema },
    async handler({ actor, body, resource }, ctx) {
      return lifecycle.setOptions(ctx, actor, resource.record, body);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/enable',
    summary: 'Enable the project (deploys allowed, brought online)',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, response: ProjectSchema },
    async handler({ actor, resource }, ctx) {
      return lifecycle.setStatus(ctx, actor, resource.record, 'enabled');
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/disable',
    summary: 'Disable the project (deploys paused, taken offline)',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, response: ProjectSchema },
    async handler({ actor, resource }, ctx) {
      return lifecycle.setStatus(ctx, actor, resource.record, 'disabled');
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/routing/retry',
    summary: 'Retry syncing the free edge-route domain, without a rebuild',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, response: RoutingAttemptSchema },
    async handler({ actor, resource }, ctx) {
      return lifecycle.retryRouting(ctx, actor, resource.record);
    },
  }),
];

export const projectsModule: ModuleDef = {
  name: 'projects',
  routes: [...coreRoutes, ...configRoutes, ...routeRuleRoutes, ...domainRoutes],
  resolvers: { project: resolveProject },
  declares: PROJECTS_PORTS,
  state: (ctx) => ({ projects: { reads: new ProjectReads(ctx.writes, ctx.bus) } }),
  // The `project` resources of grants (GET /api/permissions/resources?type=project, RESOURCE_NOT_IN_ORG checks).
  provides: (ctx) => ({
    catalogs: {
      project: {
        async list(ctx, orgId) {
          const rows = await projectCatalog(ctx.db, orgId);
          return rows.map((p) => ({ id: p.id, label: p.name, ...(p.slug ? { meta: { slug: p.slug } } : {}) }));
        },
        async has(ctx, orgId, id) {
          return !!(await findProject(ctx.db, orgId, id));
        },
      },
    },
  }),
};
