import { Type } from '@sinclair/typebox';
import { Answer, defineRoute } from '../../http/route.js';
import {
  AutoDeploySchema,
  CloneTokenSchema,
  CommitStatusSchema,
  EnvVarSchema,
  GitBranchSchema,
  GitInfoSchema,
  ResourcesSchema,
  WebhookDomainSchema,
} from './config.presenters.js';
import { connectDomain } from './domains.service.js';
import * as env from './env.service.js';
import * as git from './git.service.js';
import {
  AutoDeployBody,
  BranchBody,
  CloneTokenBody,
  DomainBody,
  EnvPatchBody,
  EnvQuery,
  LinkBody,
  ProjectParams,
  ResourcesBody,
  SleepModeBody,
  WebhookDomainBody,
} from './projects.schemas.js';
import { ProjectSchema } from './projects.presenters.js';
import * as resources from './resources.service.js';

const P = { kind: 'project', param: 'id' } as const;

/** Largest env PATCH body (a thousand upserts of small values fit easily; 413 beyond). */
const ENV_BODY_LIMIT = 8 * 1024 * 1024;

const resourcesPatch = (method: 'PATCH' | 'POST') =>
  defineRoute({
    method,
    url: '/api/projects/:id/resources',
    summary: method === 'PATCH' ? 'Update CPU/RAM/disk, sleep mode, port' : 'Alias of PATCH /api/projects/:id/resources',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: ResourcesBody, response: ResourcesSchema },
    async handler({ actor, body, resource }, ctx) {
      return resources.updateResources(ctx, actor, resource.record, body);
    },
  });

export const configRoutes = [
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/env',
    summary: 'List env vars of one environment (secret values masked); sends an ETag',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, querystring: EnvQuery, response: Type.Array(EnvVarSchema) },
    async handler({ query, resource }, ctx) {
      const out = await env.getEnv(ctx, resource.record, query.environment);
      return new Answer({ data: out.vars }, 200, { etag: out.etag });
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/api/projects/:id/env',
    summary: 'Merge env var changes (upserts and deletes; If-Match for optimistic concurrency)',
    tag: 'project:write',
    resource: P,
    bodyLimit: ENV_BODY_LIMIT,
    schema: { params: ProjectParams, body: EnvPatchBody, response: Type.Array(EnvVarSchema) },
    async handler({ actor, body, resource, req }, ctx) {
      const ifMatch = req.headers['if-match'];
      const out = await env.patchEnv(ctx, actor, resource.record, body, Array.isArray(ifMatch) ? ifMatch.join(',') : ifMatch);
      return new Answer({ data: out.vars }, 200, { etag: out.etag });
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/clone-token',
    summary: 'Get the per-project git clone credential (token masked)',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: CloneTokenSchema },
    async handler({ resource }, ctx) {
      return git.getCloneToken(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'PATCH',
    url: '/api/projects/:id/clone-token',
    summary: 'Set or replace the clone credential (stored encrypted)',
    tag: 'project:admin',
    resource: P,
    schema: { params: ProjectParams, body: CloneTokenBody, response: CloneTokenSchema },
    async handler({ actor, body, resource }, ctx) {
      return git.setCloneToken(ctx, actor, resource.record, body);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/git',
    summary: 'Linked repository info',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: GitInfoSchema },
    async handler({ resource }, ctx) {
      return git.gitInfo(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/git/link',
    summary: "Link a repository (the default branch when branch is omitted)",
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: LinkBody, response: ProjectSchema },
    async handler({ actor, body, resource }, ctx) {
      return git.linkRepository(ctx, actor, resource.record, body);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/branches',
    summary: 'List branches of the linked repository',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: Type.Array(GitBranchSchema) },
    async handler({ resource }, ctx) {
      return git.listBranches(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/commit-status',
    summary: 'Compare the deployed commit against the remote head',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: CommitStatusSchema },
    async handler({ resource }, ctx) {
      return git.commitStatus(ctx, resource.record);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/auto-deploy',
    summary: 'Enable or disable deploy on push',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: AutoDeployBody, response: AutoDeploySchema },
    async handler({ actor, body, resource }, ctx) {
      return git.setAutoDeploy(ctx, actor, resource.record, body.enabled);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/webhook-domain',
    summary: 'Set the domain used for git webhook delivery',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: WebhookDomainBody, response: WebhookDomainSchema },
    async handler({ actor, body, resource }, ctx) {
      return git.setWebhookDomain(ctx, actor, resource.record, body.domain);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/branch',
    summary: 'Set the deploy branch',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: BranchBody, response: ProjectSchema },
    async handler({ actor, body, resource }, ctx) {
      return git.setBranch(ctx, actor, resource.record, body.branch);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/projects/:id/resources',
    summary: 'Get CPU/RAM/disk config, sleep mode and port',
    tag: 'project:read',
    resource: P,
    schema: { params: ProjectParams, response: ResourcesSchema },
    async handler({ resource }) {
      return resources.resourcesOf(resource.record);
    },
  }),
  resourcesPatch('PATCH'),
  resourcesPatch('POST'),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/sleep-mode',
    summary: 'Set sleep mode',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: SleepModeBody, response: ResourcesSchema },
    async handler({ actor, body, resource }, ctx) {
      return resources.setSleepMode(ctx, actor, resource.record, body.sleepMode);
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/projects/:id/connect',
    summary: 'Connect a custom domain and make it primary',
    tag: 'project:write',
    resource: P,
    schema: { params: ProjectParams, body: DomainBody, response: ProjectSchema },
    async handler({ actor, body, resource }, ctx) {
      return connectDomain(ctx, actor, resource.record, body.domain);
    },
  }),
];
