import { levelAtLeast, type Tag } from './tags.js';

export const ROLES = ['owner', 'admin', 'member', 'restricted'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(s: unknown): s is Role {
  return typeof s === 'string' && (ROLES as readonly string[]).includes(s);
}

/** Rank for "nobody can grant or invite above their own role". */
export function roleRank(r: Role): number {
  return { restricted: 0, member: 1, admin: 2, owner: 3 }[r];
}

/**
 * The role table of contract section 4, as code. Grants are resolved elsewhere and widen only
 * `restricted`. The two owner-only actions (deleting the org, changing an owner) are checked by the
 * services that perform them, not by a tag.
 */
export function roleAllows(role: Role, tag: Tag): boolean {
  switch (role) {
    case 'owner':
    case 'admin':
      return true;
    case 'member':
      switch (tag.resource) {
        case 'project':
        case 'gitprovider':
          return levelAtLeast('write', tag.level);
        case 'backup_destination':
          // The destinations themselves are read-only to a member; what hangs under projects
          // (policies, runs, restores) is writable, since a member can write every project.
          return tag.sub ? levelAtLeast('write', tag.level) : levelAtLeast('read', tag.level);
        case 'permissions':
          // Only the four open routes admit a member; the others carry an admin gate as well.
          return levelAtLeast('write', tag.level);
        default:
          return false;
      }
    case 'restricted':
      return false;
  }
}
