/** The resource types a grant can name (seed: Grant and invitation). */
export const GRANT_RESOURCE_TYPES = [
  'project',
  'server',
  'mail_server',
  'backup_destination',
  'billing',
  'audit',
  'gitprovider_installation',
  'gitprovider_repository',
] as const;
export type GrantResourceType = (typeof GRANT_RESOURCE_TYPES)[number];

export function isGrantResourceType(s: unknown): s is GrantResourceType {
  return typeof s === 'string' && (GRANT_RESOURCE_TYPES as readonly string[]).includes(s);
}

export const GRANT_PERMISSIONS = ['read', 'write', 'admin'] as const;

/**
 * Which grant types can widen a tag's resource when no record is named (org-level checks such as
 * "create a project" or "read the audit log"): only a `*` grant of these types counts then.
 */
export const TAG_RESOURCE_GRANT_TYPES: Record<string, GrantResourceType[]> = {
  project: ['project'],
  backup_destination: ['backup_destination'],
  gitprovider: ['gitprovider_installation', 'gitprovider_repository'],
  audit: ['audit'],
  billing: ['billing'],
  server: ['server'],
  mail_server: ['mail_server'],
};

/** A key a grant may match: (type, id). `*` grants of the same type match every id. */
export interface GrantKey {
  type: GrantResourceType;
  id: string;
}
