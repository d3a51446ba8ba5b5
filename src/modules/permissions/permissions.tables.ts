/** Kysely table interfaces of the permissions area (migration 002_permissions). */

export interface InvitationsTable {
  id: string;
  orgId: string;
  /** Lowercase. */
  email: string;
  role: string;
  /** 'pending' | 'accepted' | 'declined' | 'cancelled'; a pending one past expiresAt reads as 'expired'. */
  status: string;
  invitedBy: string | null;
  acceptedBy: string | null;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
  respondedAt: string | null;
  materializedAt: string | null;
}

export interface InvitationGrantsTable {
  id: string;
  invitationId: string;
  orgId: string;
  resourceType: string;
  resourceId: string;
  /** JSON array of 'read' | 'write' | 'admin'. */
  permissions: string;
  createdAt: string;
}

export interface PermissionTables {
  invitations: InvitationsTable;
  invitationGrants: InvitationGrantsTable;
}
