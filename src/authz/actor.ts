import type { Role } from './roles.js';

export interface GrantRecord {
  id: string;
  resourceType: string;
  resourceId: string;
  permissions: string[];
}

/** Who is making a request, in which org, with what. Built once per request by the auth layer. */
export interface Actor {
  userId: string;
  email: string;
  orgId: string;
  role: Role;
  /** Token scopes (permission tags); null means the user's full rights. */
  scopes: string[] | null;
  via: 'session' | 'token';
  sessionId?: string;
  tokenId?: string;
  /** The user's grants in `orgId`; loaded only for the restricted role (grants widen nothing else). */
  grants: GrantRecord[];
}
