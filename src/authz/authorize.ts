import { AppError } from '../lib/errors.js';
import type { Actor } from './actor.js';
import { TAG_RESOURCE_GRANT_TYPES, type GrantKey } from './grants.js';
import { roleAllows } from './roles.js';
import { levelAtLeast, maxLevel, parseTag, tagCovers, type Tag } from './tags.js';

/**
 * A record being acted on, as authorization sees it: the org that owns it and the grant keys
 * that can widen a restricted member's rights on it (a project's env, policies and runs carry
 * the project's key).
 */
export interface ResourceRef {
  orgId: string;
  grantKeys: GrantKey[];
}

/** Does the actor's token scope (if any) cover `tag`? */
export function scopesAllow(actor: Actor, tag: Tag): boolean {
  if (!actor.scopes) return true;
  return actor.scopes.some((s) => {
    try {
      return tagCovers(parseTag(s), tag);
    } catch {
      return false;
    }
  });
}

function grantsAllow(actor: Actor, tag: Tag, resource: ResourceRef | undefined): boolean {
  if (resource) {
    return actor.grants.some((g) => {
      const lvl = maxLevel(g.permissions);
      if (!lvl || !levelAtLeast(lvl, tag.level)) return false;
      return resource.grantKeys.some((k) => k.type === g.resourceType && (g.resourceId === '*' || g.resourceId === k.id));
    });
  }
  const types = TAG_RESOURCE_GRANT_TYPES[tag.resource] ?? [];
  // Listing is always allowed: list services return only what the grants let the member read.
  if (tag.level === 'list' && types.length > 0) return true;
  return actor.grants.some((g) => {
    const lvl = maxLevel(g.permissions);
    return !!lvl && levelAtLeast(lvl, tag.level) && g.resourceId === '*' && (types as string[]).includes(g.resourceType);
  });
}

/** May `actor` do `tag` (on `resource`, when one is named)? Org membership is checked by authorize(). */
export function can(actor: Actor, tagOrString: Tag | string, resource?: ResourceRef): boolean {
  const tag = typeof tagOrString === 'string' ? parseTag(tagOrString) : tagOrString;
  if (!scopesAllow(actor, tag)) return false;
  if (roleAllows(actor.role, tag)) return true;
  if (actor.role !== 'restricted') return false;
  return grantsAllow(actor, tag, resource);
}

/**
 * The one gate: a missing record or another org's record is 404 (with a body that does not tell
 * which); a record of the actor's org that the actor may not touch is 403.
 */
export function authorize(actor: Actor, tag: Tag | string, resource: ResourceRef | null | undefined, what = 'record'): void {
  if (resource === null || (resource && resource.orgId !== actor.orgId)) {
    throw new AppError('NOT_FOUND', `${what} not found`);
  }
  if (!can(actor, tag, resource)) {
    throw new AppError('FORBIDDEN', `you do not have permission to do this (${typeof tag === 'string' ? tag : formatTag(tag)})`);
  }
}

export function formatTag(t: Tag): string {
  return t.sub ? `${t.resource}:${t.sub}:${t.level}` : `${t.resource}:${t.level}`;
}
