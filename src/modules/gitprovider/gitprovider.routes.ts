import { Type } from '@sinclair/typebox';
import { defineRoute, Answer, type ModuleDef } from '../../http/route.js';
import { invalid } from '../../lib/errors.js';
import { Obj, Str } from '../../http/schemas.js';
import { setCloneTokenProvider } from '../deployments/deployments.service.js';
import { registerCatalog } from '../permissions/catalog.js';
import { setGitPort } from '../projects/git-port.js';
import * as svc from './gitprovider.service.js';

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

/** The gate's record: the org's git provider, narrowed to the path's owner when there is one. */
const onOwner = { kind: 'gitprovider', param: 'owner' } as const;
const onOrgAccount = { kind: 'gitprovider', param: 'org' } as const;

export const gitproviderModule: ModuleDef = {
  name: 'gitprovider',
  resolvers: { gitprovider: (ctx, orgId, id) => svc.resolveGitprovider(ctx, orgId, id ?? '') },
  init(ctx) {
    setGitPort(svc.gitPortImpl);
    // The grantable-resource catalog of the two git provider grant types (ids: installation id; `owner/repo` lowercase).
    registerCatalog('gitprovider_installation', {
      list: (c, orgId) => svc.grantableResources(c, orgId, 'gitprovider_installation'),
      has: async (c, orgId, id) => (await svc.grantableResources(c, orgId, 'gitprovider_installation')).some((e) => e.id === id),
    });
    registerCatalog('gitprovider_repository', {
      list: (c, orgId, q) => svc.grantableResources(c, orgId, 'gitprovider_repository', q.owner),
      has: async (c, orgId, id) => {
        const owner = id.split('/')[0];
        if (!owner || id !== id.toLowerCase()) return false;
        return (await svc.grantableResources(c, orgId, 'gitprovider_repository', owner)).some((e) => e.id === id);
      },
    });
    // The build pipeline clones linked repositories with a fresh, repository-scoped installation token.
    setCloneTokenProvider(async (c, orgId, owner, repo) => {
      try {
        const cred = await svc.cloneCredentialFor(c, orgId, owner, repo);
        return { token: cred.token, username: cred.username };
      } catch {
        return null;
      }
    });
    ctx.scheduler.add({ name: 'gitprovider.prune', everyMs: 6 * 3600_000, run: () => svc.pruneOld(ctx) });
    ctx.jobs.register<{ deliveryId: string }>(svc.DELIVERY_JOB, async (p, info) => svc.processDelivery(ctx, p.deliveryId, info), { maxAttempts: 5, backoffMs: 1000 });
  },
  routes: [
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/status',
      summary: 'Connection status of the org: state, accounts, install URL',
      tag: 'gitprovider:read',
      // Any member reaches the handler; it authorizes gitprovider:read against the org's git grants
      // (a restricted member with a grant on one repository or installation may call it).
      access: 'member',
      async handler({ actor }, ctx) {
        await svc.authorizeProvider(ctx, actor, 'gitprovider:read');
        return svc.status(ctx, actor);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/home',
      summary: 'State, accounts and repositories in one call, filtered to what the member may see',
      tag: 'gitprovider:read',
      // Any member reaches the handler; it authorizes gitprovider:read against the org's git grants
      // (a restricted member with a grant on one repository or installation may call it).
      access: 'member',
      async handler({ actor }, ctx) {
        await svc.authorizeProvider(ctx, actor, 'gitprovider:read');
        return svc.home(ctx, actor);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/local-status',
      summary: "Whether the host's gh CLI is installed and signed in",
      tag: 'gitprovider:read',
      selfHostedOnly: true,
      async handler(_input, ctx) {
        return svc.localStatus(ctx);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/connect/poll',
      summary: 'Poll the device-flow login of the caller',
      tag: 'gitprovider:read',
      selfHostedOnly: true,
      async handler({ actor }, ctx) {
        return svc.pollDevice(ctx, actor);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/gitprovider/connect',
      summary: 'Start or advance the connection flow (redirect, device_code or terminal)',
      tag: 'gitprovider:write',
      // The body is optional (`{}` or none), so it is read by optionalSource rather than a body schema.
      async handler({ actor, req }, ctx) {
        return svc.connect(ctx, actor, optionalSource(req.body, undefined, ['oauth', 'cli']) as 'oauth' | 'cli' | undefined);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/connect/redirect',
      summary: 'OAuth and App-installation callback (the browser arrives without a session)',
      access: 'public',
      raw: true,
      schema: {
        querystring: Obj({
          code: Type.Optional(Str({ max: 512 })),
          state: Type.Optional(Str({ max: 2048 })),
          installation_id: Type.Optional(Str({ max: 20 })),
          setup_action: Type.Optional(Str({ max: 32 })),
        }),
      },
      async handler({ query, reply }, ctx) {
        const out = await svc.completeRedirect(ctx, query);
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
      schema: { querystring: Obj({ source: Type.Optional(SourceQ) }) },
      async handler({ actor, req, query }, ctx) {
        const source = optionalSource(req.body, query.source, ['oauth', 'cli', 'all']) ?? 'all';
        return svc.disconnect(ctx, actor, source as 'oauth' | 'cli' | 'all');
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos',
      summary: "The connected accounts' repositories; optional owner",
      tag: 'gitprovider:list',
      schema: { querystring: Obj({ owner: Type.Optional(Owner) }) },
      async handler({ actor, query }, ctx) {
        return svc.listRepos(ctx, actor, { owner: query.owner });
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/gitprovider/repos',
      summary: 'Create a repository',
      tag: 'gitprovider:write',
      status: 201,
      schema: { body: Obj({ name: RepoName, private: Type.Optional(Type.Boolean()), owner: Type.Optional(Owner), description: Type.Optional(Str({ max: 350 })) }) },
      async handler({ actor, body }, ctx) {
        return svc.createRepo(ctx, actor, body);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/orgs/:org/repos',
      summary: 'Repositories of an org or account',
      tag: 'gitprovider:list',
      resource: onOrgAccount,
      schema: { params: Obj({ org: Owner }) },
      async handler({ actor, params }, ctx) {
        return svc.listOwnerRepos(ctx, actor, params.org);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo',
      summary: 'Repository metadata; branches=true inlines branches',
      tag: 'gitprovider:read',
      resource: onOwner,
      schema: { params: RepoParams, querystring: Obj({ branches: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) }) },
      async handler({ actor, params, query }, ctx) {
        return svc.getRepo(ctx, actor, params.owner, params.repo, query.branches === 'true');
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/gitprovider/repos/:owner/:repo',
      summary: 'Delete a repository',
      tag: 'gitprovider:admin',
      resource: onOwner,
      schema: { params: RepoParams },
      async handler({ actor, params }, ctx) {
        return svc.deleteRepo(ctx, actor, params.owner, params.repo);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/branches',
      summary: 'List branches',
      tag: 'gitprovider:list',
      resource: onOwner,
      schema: { params: RepoParams },
      async handler({ actor, params }, ctx) {
        return svc.listBranches(ctx, actor, params.owner, params.repo);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/clone-token',
      summary: 'Mint a short-lived clone token (App installations only)',
      tag: 'gitprovider:read',
      resource: onOwner,
      schema: { params: RepoParams },
      async handler({ actor, params, reply }, ctx) {
        reply.header('cache-control', 'no-store');
        return svc.cloneToken(ctx, actor, params.owner, params.repo);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/files',
      summary: 'List files and directories at a path',
      tag: 'gitprovider:list',
      resource: onOwner,
      schema: { params: RepoParams, querystring: Obj({ path: Type.Optional(Str({ max: 1024 })), branch: Type.Optional(Branch) }) },
      async handler({ actor, params, query }, ctx) {
        return svc.listFiles(ctx, actor, params.owner, params.repo, query);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/file',
      summary: 'Read one file (default package.json); *.json is parsed',
      tag: 'gitprovider:read',
      resource: onOwner,
      schema: { params: RepoParams, querystring: Obj({ file: Type.Optional(Str({ min: 1, max: 1024 })), branch: Type.Optional(Branch) }) },
      async handler({ actor, params, query }, ctx) {
        return svc.readFile(ctx, actor, params.owner, params.repo, query);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/gitprovider/repos/:owner/:repo/webhooks',
      summary: "List the repository's webhooks",
      tag: 'gitprovider:list',
      resource: onOwner,
      schema: { params: RepoParams },
      async handler({ actor, params }, ctx) {
        return svc.listWebhooks(ctx, actor, params.owner, params.repo);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/gitprovider/repos/:owner/:repo/webhooks',
      summary: 'Register the push webhook that drives auto-deploy, or reuse an existing one',
      tag: 'gitprovider:write',
      resource: onOwner,
      schema: { params: RepoParams },
      async handler({ actor, params }, ctx) {
        const out = await svc.registerWebhook(ctx, actor, params.owner, params.repo);
        return new Answer({ data: { ...out.hook, reused: !out.created } }, out.created ? 201 : 200);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/gitprovider/repos/:owner/:repo/webhooks',
      summary: 'Delete a webhook',
      tag: 'gitprovider:admin',
      resource: onOwner,
      schema: { params: RepoParams, body: Obj({ hookId: Type.Union([Type.Integer({ minimum: 1 }), Str({ min: 1, max: 20, pattern: '^[0-9]+$' })]) }) },
      async handler({ actor, params, body }, ctx) {
        return svc.deleteWebhook(ctx, actor, params.owner, params.repo, Number(body.hookId));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/gitprovider/webhook',
      summary: 'Incoming GitHub deliveries (push, installation, installation_repositories), signed with the webhook secret',
      access: 'public',
      rawBody: true,
      bodyLimit: 25 * 1024 * 1024,
      async handler({ req }, ctx) {
        const h = (n: string) => {
          const v = req.headers[n];
          return typeof v === 'string' ? v : undefined;
        };
        const out = await svc.receiveDelivery(ctx, {
          raw: req.rawBody ?? Buffer.alloc(0),
          signature: h('x-hub-signature-256'),
          event: h('x-github-event'),
          deliveryId: h('x-github-delivery'),
          hookId: h('x-github-hook-id'),
        });
        return new Answer(out.body, out.status);
      },
    }),
  ],
};

export { cloneCredentialFor } from './gitprovider.service.js';
