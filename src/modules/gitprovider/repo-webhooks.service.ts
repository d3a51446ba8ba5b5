import type { Octokit } from '@octokit/core';
import type { Actor } from '../../authz/actor.js';
import type { AppContext } from '../../context.js';
import { AppError } from '../../lib/errors.js';
import { insertAuditEvent } from '../audit/index.js';
import { gitLinks } from '../projects/index.js';
import * as gh from './github.js';
import { toWebhook, type Webhook } from './gitprovider.presenters.js';
import { clientFor } from './sources.js';

/**
 * The push webhooks registered on repositories at GitHub (they drive auto-deploy): list, register or
 * reuse, delete. Deliveries arriving from them are `deliveries.service.ts`.
 */

/** Where a repository's hook points: the webhook domain of a project linked to it, else the public URL. */
async function webhookTarget(ctx: AppContext, orgId: string, owner: string, repo: string): Promise<string> {
  const linked = await gitLinks.projectsLinkedTo(ctx.db, orgId, owner, repo);
  const domain = linked.find((p) => p.webhookDomain)?.webhookDomain;
  return `${domain ? `https://${domain}` : ctx.publicUrl()}/api/gitprovider/webhook`;
}

export async function listWebhooks(ctx: AppContext, actor: Actor, owner: string, repo: string): Promise<Webhook[]> {
  const { kit } = await clientFor(ctx, actor.orgId, owner);
  const data = (await gh.call(() => kit.request('GET /repos/{owner}/{repo}/hooks', { owner, repo, per_page: 100 }))).data;
  return data.map(toWebhook);
}

/** Registers the push hook pointing at `url`, or reuses (and re-activates) an existing one. */
export async function ensureHook(ctx: AppContext, kit: Octokit, owner: string, repo: string, url: string): Promise<{ hook: Webhook; created: boolean }> {
  const secret = ctx.config.github.webhookSecret;
  if (!secret) throw new AppError('CONFLICT', 'BERTH_GITHUB_WEBHOOK_SECRET is not set: deliveries would all be refused, so no webhook is registered');
  const hooks = (await gh.call(() => kit.request('GET /repos/{owner}/{repo}/hooks', { owner, repo, per_page: 100 }))).data.map(toWebhook);
  const existing = hooks.find((h) => h.url === url);
  if (existing) {
    // Reuse: make sure it is active and delivers pushes, with our secret.
    if (!existing.active || !existing.events.includes('push')) {
      const upd = (
        await gh.call(() =>
          kit.request('PATCH /repos/{owner}/{repo}/hooks/{hook_id}', {
            owner,
            repo,
            hook_id: existing.id,
            active: true,
            add_events: ['push'],
            config: { url, content_type: 'json', secret, insecure_ssl: '0' },
          }),
        )
      ).data;
      return { hook: toWebhook(upd), created: false };
    }
    return { hook: existing, created: false };
  }
  const data = (
    await gh.call(() =>
      kit.request('POST /repos/{owner}/{repo}/hooks', { owner, repo, name: 'web', active: true, events: ['push'], config: { url, content_type: 'json', secret, insecure_ssl: '0' } }),
    )
  ).data;
  return { hook: toWebhook(data), created: true };
}

export async function registerWebhook(ctx: AppContext, actor: Actor, owner: string, repo: string): Promise<{ hook: Webhook; created: boolean }> {
  const { kit } = await clientFor(ctx, actor.orgId, owner);
  const url = await webhookTarget(ctx, actor.orgId, owner, repo);
  const out = await ensureHook(ctx, kit, owner, repo, url);
  if (out.created) {
    await insertAuditEvent(ctx.db, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.webhook.create', resourceType: 'gitprovider_repository', resourceId: `${owner}/${repo}`, details: { hookId: out.hook.id } });
  }
  return out;
}

/** Deletes a hook at GitHub; projects that recorded it forget its id. */
export async function deleteWebhook(ctx: AppContext, actor: Actor, owner: string, repo: string, hookId: number): Promise<{ deleted: boolean; hookId: number }> {
  const { kit } = await clientFor(ctx, actor.orgId, owner);
  await gh.call(() => kit.request('DELETE /repos/{owner}/{repo}/hooks/{hook_id}', { owner, repo, hook_id: hookId }), 'webhook');
  const linked = (await gitLinks.projectsLinkedTo(ctx.db, actor.orgId, owner, repo)).filter((p) => p.webhookId === String(hookId));
  await gitLinks.clearProjectWebhooks(ctx.db, actor.orgId, linked.map((p) => p.id));
  await insertAuditEvent(ctx.db, { orgId: actor.orgId, actorId: actor.userId, action: 'gitprovider.webhook.delete', resourceType: 'gitprovider_repository', resourceId: `${owner}/${repo}`, details: { hookId } });
  return { deleted: true, hookId };
}
