import { Type } from '@sinclair/typebox';
import { defineRoute, Answer, type ModuleDef } from '../../http/route.js';
import { invalid } from '../../lib/errors.js';
import { Obj, Str } from '../../http/schemas.js';
import { resolveAccount, resolveProvider, resolveRepository } from './access.js';
import { completeRedirect } from './callback.service.js';
import { cloneToken } from './clone-tokens.js';
import { connect, disconnect, pollDevice } from './connect.service.js';
import { DELIVERY_JOB, processDelivery, pruneOld, receiveDelivery } from './deliveries.service.js';
import * as P from './gitprovider.presenters.js';
import { createGitproviderState } from './github.js';
import { gitproviderPorts } from './provided-ports.js';
import { PREVIEW_COMMENT_JOB, PREVIEW_STATUS_JOB, reportStatus, syncComment } from './previews.service.js';
import { deleteWebhook, listWebhooks, registerWebhook } from './repo-webhooks.service.js';
import * as repos from './repos.service.js';
import { home, localStatus, status } from './status.service.js';

/** GitHub logins: letters, digits and single hyphens, at most 39; repository names: at most 100 of [A-Za-z0-9._-]. */
const Owner = Str({ min: 1, max: 39, pattern: '^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$' });
const RepoName = Str({ min: 1, max: 100, pattern: '^(?!\\.\\.?$)[A-Za-z0-9._-]+$' });
const RepoParams = Obj({ owner: Owner, repo: RepoName });
const Branch = Str({ min: 1, max: 255, pattern: '^[^\\s~^:?*\\[\\\\]+$' });
const SourceQ = Type.Union([Type.Literal('oauth'), Type.Literal('cli'), Type.Literal('all')]);

/** `source` from an optional JSON body (none, `{}` or `{ source }`), else the query; 400 naming the field otherwise. */
function optionalSource(body: unknown, fromQuery: string | undefined, allowed: string[]): string | undefined {
  if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) throw invalid('body', 'body must be an object');
  const v = (body as { source?: unknown } | undefined | null)?.source ?? fromQuery;
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !allowed.includes(v)) throw invalid('source', `source must be one of: ${allowed.join(', ')}`);
  return v;
}

/**
 * The records the gate checks (access.ts). A repository is named by both path parameters; an account
 * by `:org`. The org's provider as a whole (status, home) is the org-level record of its kind
 * (`org: true`): named by no field.
 */
const onRepository = { kind: 'gitprovider_repository', param: 'repo' } as const;
const onAccount = { kind: 'gitprovider_account', param: 'org' } as const;
const onProvider = { kind: 'gitprovider', org: true } as const;

export const gitproviderModule: ModuleDef = {
  name: 'gitprovider',
  resolvers: {
    gitprovider: (ctx, orgId) => resolveProvider(ctx, orgId),
    gitprovider_account: (ctx, orgId, id) => resolveAccount(ctx, orgId, id),
    gitprovider_repository: (ctx, orgId, id, params) => resolveRepository(ctx, orgId, id, params),
  },
  state: () => ({ gitprovider: createGitproviderState() }),
  declares: { cloneTokens: 'one' },
  provides: () => gitproviderPorts(),
  init(ctx) {
    ctx.scheduler.add({ name: 'gitprovider.prune', everyMs: 6 * 3600_000, run: () => pruneOld(ctx) });
    ctx.jobs.register<{ deliveryId: string }>(DELIVERY_JOB, async (p, info) => processDelivery(ctx, p.deliveryId, info), { maxAttempts: 5, backoffMs: 1000 });
    // GitHub writes of preview deployments: a few attempts with backoff, never the deployment's concern.
    ctx.jobs.register<{ orgId: string; id: string }>(PREVIEW_STATUS_JOB, async (p) => reportStatus(ctx, p.orgId, p.id), { maxAttempts: 4, backoffMs: 2000 });
    ctx.jobs.register<{ orgId: string; id: string }>(PREVIEW_COMMENT_JOB, async (p) => syncComment(ctx, p.orgId, p.id), { maxAttempts: 4, backoffMs: 2000 });
  },
  routes: [
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/status',
      summary: 'Connection status of the org: state, accounts, install URL',
      tag: 'gitprovider:read',
      // Any git grant of the org widens a restricted member here (accounts are then filtered to its grants).
      resource: onProvider,
      schema: { response: P.StatusSchema },
      handler: ({ actor }, ctx) => status(ctx, actor),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/home',
      summary: 'State, accounts and repositories in one call, filtered to what the member may see',
      tag: 'gitprovider:read',
      resource: onProvider,
      schema: { response: P.HomeSchema },
      handler: ({ actor }, ctx) => home(ctx, actor),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/local-status',
      summary: "Whether the host's gh CLI is installed and signed in",
      tag: 'gitprovider:read',
      selfHostedOnly: true,
      schema: { response: P.LocalStatusSchema },
      handler: (_input, ctx) => localStatus(ctx),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/connect/poll',
      summary: 'Poll the device-flow login of the caller',
      tag: 'gitprovider:read',
      selfHostedOnly: true,
      schema: { response: P.DevicePollSchema },
      handler: ({ actor }, ctx) => pollDevice(ctx, actor),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/gitprovider/connect',
      summary: 'Start or advance the connection flow (redirect, device_code or terminal)',
      tag: 'gitprovider:write',
      // The body is optional (`{}` or none), so it is read by optionalSource rather than a body schema.
      schema: { response: P.ConnectSchema },
      handler: ({ actor, req }, ctx) => connect(ctx, actor, optionalSource(req.body, undefined, ['oauth', 'cli']) as 'oauth' | 'cli' | undefined),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/connect/redirect',
      summary: 'OAuth and App-installation callback (the browser arrives without a session); 302 to the dashboard',
      access: 'public',
      raw: true,
      produces: 'text/plain',
      schema: {
        querystring: Obj({
          code: Type.Optional(Str({ max: 512 })),
          state: Type.Optional(Str({ max: 2048 })),
          installation_id: Type.Optional(Str({ max: 20 })),
          setup_action: Type.Optional(Str({ max: 32 })),
        }),
      },
      async handler({ query, reply }, ctx) {
        const out = await completeRedirect(ctx, query);
        const to = new URL('/', ctx.publicUrl());
        to.searchParams.set('gitprovider', 'connected');
        to.searchParams.set('source', out.source);
        return reply.code(302).header('location', to.toString()).header('cache-control', 'no-store').send();
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/gitprovider/disconnect',
      summary: 'Drop the stored credentials of one source or all (does not uninstall the App)',
      tag: 'gitprovider:admin',
      schema: { querystring: Obj({ source: Type.Optional(SourceQ) }), response: P.DisconnectSchema },
      handler: ({ actor, req, query }, ctx) => disconnect(ctx, actor, (optionalSource(req.body, query.source, ['oauth', 'cli', 'all']) ?? 'all') as 'oauth' | 'cli' | 'all'),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos',
      summary: "The connected accounts' repositories; optional owner",
      tag: 'gitprovider:list',
      schema: { querystring: Obj({ owner: Type.Optional(Owner) }), response: Type.Array(P.RepoSchema) },
      handler: ({ actor, query }, ctx) => repos.listRepos(ctx, actor, { owner: query.owner }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/gitprovider/repos',
      summary: 'Create a repository',
      tag: 'gitprovider:write',
      status: 201,
      schema: {
        body: Obj({ name: RepoName, private: Type.Optional(Type.Boolean()), owner: Type.Optional(Owner), description: Type.Optional(Str({ max: 350 })) }),
        response: P.RepoSchema,
      },
      handler: ({ actor, body }, ctx) => repos.createRepo(ctx, actor, body),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/orgs/:org/repos',
      summary: 'Repositories of an org or account',
      tag: 'gitprovider:list',
      resource: onAccount,
      schema: { params: Obj({ org: Owner }), response: Type.Array(P.RepoSchema) },
      handler: ({ actor, params }, ctx) => repos.listOwnerRepos(ctx, actor, params.org),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo',
      summary: 'Repository metadata; branches=true inlines branches',
      tag: 'gitprovider:read',
      resource: onRepository,
      schema: {
        params: RepoParams,
        querystring: Obj({ branches: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) }),
        response: P.RepoWithBranchesSchema,
      },
      handler: ({ actor, params, query }, ctx) => repos.getRepo(ctx, actor, params.owner, params.repo, query.branches === 'true'),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/gitprovider/repos/:owner/:repo',
      summary: 'Delete a repository',
      tag: 'gitprovider:admin',
      resource: onRepository,
      schema: { params: RepoParams, response: P.DeletedRepoSchema },
      handler: ({ actor, params }, ctx) => repos.deleteRepo(ctx, actor, params.owner, params.repo),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/branches',
      summary: 'List branches',
      tag: 'gitprovider:list',
      resource: onRepository,
      schema: { params: RepoParams, response: Type.Array(P.BranchSchema) },
      handler: ({ actor, params }, ctx) => repos.listBranches(ctx, actor, params.owner, params.repo),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/clone-token',
      summary: 'Mint a short-lived clone token (App installations only)',
      tag: 'gitprovider:read',
      resource: onRepository,
      schema: { params: RepoParams, response: P.CloneTokenSchema },
      async handler({ actor, params, reply }, ctx) {
        reply.header('cache-control', 'no-store');
        return cloneToken(ctx, actor.orgId, params.owner, params.repo);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/files',
      summary: 'List files and directories at a path',
      tag: 'gitprovider:list',
      resource: onRepository,
      schema: {
        params: RepoParams,
        querystring: Obj({ path: Type.Optional(Str({ max: 1024 })), branch: Type.Optional(Branch) }),
        response: Type.Array(P.FileEntrySchema),
      },
      handler: ({ actor, params, query }, ctx) => repos.listFiles(ctx, actor, params.owner, params.repo, query),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/file',
      summary: 'Read one file (default package.json); *.json is parsed',
      tag: 'gitprovider:read',
      resource: onRepository,
      schema: {
        params: RepoParams,
        querystring: Obj({ file: Type.Optional(Str({ min: 1, max: 1024 })), branch: Type.Optional(Branch) }),
        response: P.FileSchema,
      },
      handler: ({ actor, params, query }, ctx) => repos.readFile(ctx, actor, params.owner, params.repo, query),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/webhooks',
      summary: "List the repository's webhooks",
      tag: 'gitprovider:list',
      resource: onRepository,
      schema: { params: RepoParams, response: Type.Array(P.WebhookSchema) },
      handler: ({ actor, params }, ctx) => listWebhooks(ctx, actor, params.owner, params.repo),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/gitprovider/repos/:owner/:repo/webhooks',
      summary: 'Register the push webhook that drives auto-deploy (201), or reuse an existing one (200)',
      tag: 'gitprovider:write',
      resource: onRepository,
      status: 201,
      statuses: [200],
      // The status depends on the outcome, so the handler answers an Answer (enveloped: `{ data }`).
      schema: { params: RepoParams, response: P.RegisteredWebhookSchema },
      async handler({ actor, params }, ctx) {
        const out = await registerWebhook(ctx, actor, params.owner, params.repo);
        return new Answer({ data: { ...out.hook, reused: !out.created } }, out.created ? 201 : 200);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/gitprovider/repos/:owner/:repo/webhooks',
      summary: 'Delete a webhook',
      tag: 'gitprovider:admin',
      resource: onRepository,
      schema: {
        params: RepoParams,
        body: Obj({ hookId: Type.Union([Type.Integer({ minimum: 1 }), Str({ min: 1, max: 20, pattern: '^[0-9]+$' })]) }),
        response: P.DeletedWebhookSchema,
      },
      handler: ({ actor, params, body }, ctx) => deleteWebhook(ctx, actor, params.owner, params.repo, Number(body.hookId)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/gitprovider/webhook',
      summary: 'Incoming GitHub deliveries (push, pull_request, installation, installation_repositories), signed with the webhook secret; 202 queued, 200 ignored or duplicate',
      access: 'public',
      rawBody: true,
      bodyLimit: 25 * 1024 * 1024,
      status: 202,
      statuses: [200],
      schema: { response: P.DeliveryAckSchema },
      async handler({ req }, ctx) {
        const h = (n: string) => {
          const v = req.headers[n];
          return typeof v === 'string' ? v : undefined;
        };
        const out = await receiveDelivery(ctx, {
          raw: req.rawBody ?? Buffer.alloc(0),
          signature: h('x-hub-signature-256'),
          event: h('x-github-event'),
          deliveryId: h('x-github-delivery'),
          hookId: h('x-github-hook-id'),
        });
        return new Answer({ data: out.ack }, out.status);
      },
    }),
  ],
};
