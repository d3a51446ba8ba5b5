import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link } from 'wouter';
import { api, data } from '../../api/client';
import { Notice } from '../../ui/controls';
import { useSession } from '../../session';

/**
 * The org area's reads (members, catalog, org meta), the answer types they carry (inferred from the
 * typed client, so they follow schema.d.ts), and the vocabulary of roles, resource types and
 * permissions the pages share.
 */

const fetchMembers = () => data(api.GET('/api/permissions/members'));
const fetchInvitations = (status: InvitationFilter) => data(api.GET('/api/permissions/invitations', { params: { query: { status } } }));
const fetchGrants = () => data(api.GET('/api/permissions/grants', { params: { query: {} } }));
const fetchCatalog = (type: string) => data(api.GET('/api/permissions/resources', { params: { query: { type } } }));

export type Member = Awaited<ReturnType<typeof fetchMembers>>[number];
export type Invitation = Awaited<ReturnType<typeof fetchInvitations>>[number];
export type Grant = Awaited<ReturnType<typeof fetchGrants>>[number];

export const INVITATION_FILTERS = ['open', 'pending', 'expired', 'accepted', 'declined', 'cancelled', 'all'] as const;
export type InvitationFilter = (typeof INVITATION_FILTERS)[number];

export const memberKeys = { all: ['org', 'members'] as const };
export const invitationKeys = { list: (status: InvitationFilter) => ['org', 'invitations', status] as const, all: ['org', 'invitations'] as const };
export const grantKeys = { all: ['org', 'grants'] as const };

export function useMembers(enabled = true) {
  return useQuery({ queryKey: memberKeys.all, queryFn: fetchMembers, enabled });
}

export function useInvitations(status: InvitationFilter) {
  return useQuery({ queryKey: invitationKeys.list(status), queryFn: () => fetchInvitations(status) });
}

export function useGrants() {
  return useQuery({ queryKey: grantKeys.all, queryFn: fetchGrants });
}

/** The grantable resources of one type in the active org (GET /api/permissions/resources). */
export function useCatalog(type: string, enabled = true) {
  return useQuery({ queryKey: ['org', 'catalog', type], queryFn: () => fetchCatalog(type), enabled: enabled && !!type, staleTime: 30_000 });
}

// ---------------------------------------------------------------- vocabulary

export const ROLES = ['owner', 'admin', 'member', 'restricted'] as const;
export type Role = (typeof ROLES)[number];

export const ROLE_HINT: Record<Role, string> = {
  owner: 'everything',
  admin: 'everything but deleting the org and changing an owner',
  member: 'projects and git; no admin rights',
  restricted: 'only what their grants give',
};

export const PERMISSIONS = ['read', 'write', 'admin'] as const;

/** Grantable resource types (src/authz/grants.ts), in the order a person looks for them. */
export const RESOURCE_TYPES: Array<{ type: string; label: string; adminOnly?: boolean }> = [
  { type: 'project', label: 'Project' },
  { type: 'backup_destination', label: 'Backup destination' },
  { type: 'audit', label: 'Audit log' },
  { type: 'billing', label: 'Billing' },
  { type: 'server', label: 'Server' },
  { type: 'mail_server', label: 'Mail server' },
  { type: 'gitprovider_installation', label: 'Git installation', adminOnly: true },
  { type: 'gitprovider_repository', label: 'Git repository', adminOnly: true },
];

export function typeLabel(type: string): string {
  return RESOURCE_TYPES.find((t) => t.type === type)?.label ?? type;
}

/** A resource's name from its type's catalog ("All projects" for `*`), else its id. */
export function useResourceLabel(): (type: string, id: string) => string {
  const projects = useCatalog('project');
  const destinations = useCatalog('backup_destination');
  return (type, id) => {
    if (id === '*') return `All (${typeLabel(type).toLowerCase()})`;
    const list = type === 'project' ? projects.data : type === 'backup_destination' ? destinations.data : undefined;
    return list?.find((e) => e.id === id)?.label ?? id;
  };
}

// ---------------------------------------------------------------- who may see the page

/**
 * Members, invitations and grants belong to team orgs and to their owners and admins: a personal
 * org gets the explanation and the way to a team org; a member without the role is told who can.
 */
export function TeamAdminOnly({ what, children }: { what: string; children: ReactNode }) {
  const me = useSession();
  if (!me.org) return <Notice kind="warn">Your active organization no longer exists. Pick another one in the organization menu.</Notice>;
  if (!me.org.isTeam) {
    return (
      <div className="card stack">
        <p>
          <strong>{me.org.name}</strong> is your personal organization: it has only you. Members, invitations and grants live in
          team organizations.
        </p>
        <p>
          <Link href="/org/new" className="btn btn-primary">
            Create a team organization
          </Link>
        </p>
        {me.orgs.some((o) => o.isTeam) ? <p className="muted">Or switch to one of your team organizations in the organization menu at the top.</p> : null}
      </div>
    );
  }
  if (me.role !== 'owner' && me.role !== 'admin') {
    return (
      <Notice kind="info">
        Only owners and admins of <strong>{me.org.name}</strong> manage its {what}. Your role here is {me.role}.
      </Notice>
    );
  }
  return <>{children}</>;
}

// ---------------------------------------------------------------- time

/** "in 7 days", "3 h ago": past and future, with the exact time on hover. */
export function RelTime({ at }: { at: string | null | undefined }) {
  if (!at) return <span className="muted">never</span>;
  const t = Date.parse(at);
  const s = Math.round((t - Date.now()) / 1000);
  const a = Math.abs(s);
  const span = a < 60 ? null : a < 3600 ? `${Math.round(a / 60)} min` : a < 86400 ? `${Math.round(a / 3600)} h` : plural(Math.round(a / 86400), 'day');
  const text = span === null ? 'just now' : s > 0 ? `in ${span}` : `${span} ago`;
  return (
    <time dateTime={at} title={new Date(t).toLocaleString()}>
      {text}
    </time>
  );
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
