import { useSession, type Me } from './session';

export type Level = 'read' | 'write' | 'admin';
const RANK: Record<string, number> = { list: 0, read: 1, write: 2, admin: 3 };

/**
 * What the signed-in member may do in the active org, worked out as the server does (the role table
 * of src/authz/roles.ts, widened for a restricted member by the grants /api/auth/me lists): pages use
 * it to leave out the actions a member cannot take. The API still decides every request.
 */
export interface Access {
  /** Members, invitations and grants: owners and admins. */
  manageOrg: boolean;
  /** The audit log: owners and admins, or a grant on it. */
  audit: boolean;
  /** The backup destinations page: everyone but a restricted member without a destination grant. */
  backupDestinations: boolean;
  /** New project (`project:write` on the org: a `*` project grant for a restricted member). */
  createProject: boolean;
  /** `level` on one project (write: its settings; admin: deleting it). */
  project(id: string, level: Level): boolean;
  /** `level` on one backup destination (read: listed; write: create, edit, test; admin: delete). */
  destination(id: string | null, level: Level): boolean;
}

export function accessOf(me: Pick<Me, 'role' | 'grants'>): Access {
  if (me.role === 'owner' || me.role === 'admin') {
    return { manageOrg: true, audit: true, backupDestinations: true, createProject: true, project: () => true, destination: () => true };
  }
  if (me.role === 'member') {
    return {
      manageOrg: false,
      audit: false,
      backupDestinations: true,
      createProject: true,
      project: (_id, level) => RANK[level]! <= RANK.write!,
      // A member reads the org's destinations; creating and changing them is for admins.
      destination: (_id, level) => level === 'read',
    };
  }
  // restricted (or a role this dashboard does not know): only what a grant gives.
  const held = (type: string, id: string | null, level: Level) =>
    me.grants.some((g) => g.resourceType === type && (g.resourceId === '*' || g.resourceId === id) && Math.max(-1, ...g.permissions.map((p) => RANK[p] ?? -1)) >= RANK[level]!);
  return {
    manageOrg: false,
    audit: held('audit', null, 'read'),
    backupDestinations: me.grants.some((g) => g.resourceType === 'backup_destination'),
    createProject: held('project', null, 'write'),
    project: (id, level) => held('project', id, level),
    destination: (id, level) => held('backup_destination', id, level),
  };
}

/** The signed-in member's access in the active org (pages under RequireSession). */
export function useAccess(): Access {
  return accessOf(useSession());
}
