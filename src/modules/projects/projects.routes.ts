import { Answer, defineRoute, type ModuleDef } from '../../http/route.js';
import { configRoutes } from './config.routes.js';
import * as projects from './projects.service.js';
import { resolvedProject } from './projects.service.js';
import {
  CreateBody,
  DeploymentsQuery,
  EnsureBody,
  EnvironmentBody,
  OptionsBody,
  ProjectParams,
  ServiceBody,
  UpdateBody,
} from './projects.schemas.js';
import { resolveProject } from './projects.store.js';
import { routeRuleRoutes } from './route-rules.routes.js';
import * as services from './services.service.js';

const P = { kind: 'project', param: 'id' } as const;

const coreRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/projects',
    summary: 'List the projects of the org the caller can read',
    tag: 'project:list',
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
    schema: { body: CreateBody },
    async handler({ actor, body }, ctx) {
      return projects.createProject(ctx, actor, body);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/home',
    summary: 'Home feed: local (and, when linked, cloud) projects',
    tag: 'project:list',
    async handler({ actor }, ctx) {
      return projects.home(ctx, actor);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/ensure',
    summary: 'Create a project, or update `projectId` in place (folder-upload step 3)',
    tag: 'project:write',
    // The project is named in the body: the service authorizes on it (404 other org, 403 no write).
    access: 'member',
    schema: { body: EnsureBody },
    async handler({ actor, body }, ctx) {
      const out = await projects.ensureProject(ctx, actor, body);
      return new Answer({ data: out.project }, out.created ? 201 : 200);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id',
    summary: 'Get a project: config, source, routes, status',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams },
    async handler({ resource }, ctx) {
      return projects.getProject(ctx, resolvedProject(resource));
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/api/projects/:id',
    summary: 'Update configuration (partial: send only the fields to change)',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: UpdateBody },
    async handler({ actor, body, resource }, ctx) {
      return projects.updateProjectConfig(ctx, actor, resolvedProject(resource), body);
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/api/projects/:id',
    summary: 'Delete a project and everything the deletion preview lists',
    tag: 'project:admin',
    resource: P,
    schema: { params: ProjectParams },
    async handler({ actor, resource }, ctx) {
      return projects.deleteProject(ctx, actor, resolvedProject(resource));
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/info',
    summary: 'Detailed info: runtime, build, source',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams },
    async handler({ resource }, ctx) {
      return projects.info(ctx, resolvedProject(resource));
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/deletion-preview',
    summary: 'What deleting the project would remove (counts and names)',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams },
    async handler({ resource }, ctx) {
      return projects.deletionPreview(ctx, resolvedProject(resource));
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/environments',
    summary: 'List environments (production and previews)',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams },
    async handler({ resource }, ctx) {
      return projects.listEnvironments(ctx, resolvedProject(resource));
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/environments',
    summary: 'Create a preview environment',
    tag: 'project:write',
    resource: P,
    status: 201,
    schema: { params: ProjectParams, body: EnvironmentBody },
    async handler({ actor, body, resource }, ctx) {
      return projects.createEnvironment(ctx, actor, resolvedProject(resource), body);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/options',
    summary: 'Set build/deploy options',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: OptionsBody },
    async handler({ actor, body, resource }, ctx) {
      return projects.setOptions(ctx, actor, resolvedProject(resource), body);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/enable',
    summary: 'Enable the project (deploys allowed, brought online)',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams },
    async handler({ actor, resource }, ctx) {
      return projects.setStatus(ctx, actor, resolvedProject(resource), 'enabled');
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/disable',
    summary: 'Disable the project (deploys paused, taken offline)',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams },
    async handler({ actor, resource }, ctx) {
      return projects.setStatus(ctx, actor, resolvedProject(resource), 'disabled');
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/routing/retry',
    summary: 'Retry syncing the free edge-route domain, without a rebuild',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams },
    async handler({ actor, resource }, ctx) {
      return projects.retryRouting(ctx, actor, resolvedProject(resource));
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/deployments',
    summary: "List the project's deployments, newest first",
    tag: 'project:deployment:list',
    resource: P,
    schema: { params: ProjectParams, querystring: DeploymentsQuery },
    async handler({ query, resource }, ctx) {
      return projects.listDeployments(ctx, resolvedProject(resource), query);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/services',
    summary: "List the project's services (the data volume, attached databases)",
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams },
    async handler({ resource }, ctx) {
      return services.listServices(ctx, resolvedProject(resource));
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/services',
    summary: 'Attach a PostgreSQL database as a service (its URL is stored encrypted, never returned)',
    tag: 'project:write',
    resource: P,
    status: 201,
    schema: { params: ProjectParams, body: ServiceBody },
    async handler({ actor, body, resource }, ctx) {
      return services.createService(ctx, actor, resolvedProject(resource), body);
    },
  }),
];

export const projectsModule: ModuleDef = {
  name: 'projects',
  routes: [...coreRoutes, ...configRoutes, ...routeRuleRoutes],
  resolvers: { project: resolveProject },
};
