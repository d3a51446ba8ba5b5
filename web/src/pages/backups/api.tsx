import { api, data } from '../../api/client';
import type { operations } from '../../../../src/api-types/schema';

/** The backups area's records as the API answers them (from the generated OpenAPI types). */
type Json<Op, Status extends number = 200> = Op extends { responses: { [S in Status]: { content: { 'application/json': infer B } } } } ? B : never;
type DataOf<Op, Status extends number = 200> = Json<Op, Status> extends { data: infer D } ? D : never;

export type Destination = DataOf<operations['getBackupDestinations']>[number];
export type DestinationBody = NonNullable<operations['postBackupDestinations']['requestBody']>['content']['application/json'];
export type DestinationPatch = NonNullable<operations['patchBackupDestinationsById']['requestBody']>['content']['application/json'];
export type DestinationTest = DataOf<operations['postBackupDestinationsByIdTest']>;
export type Policy = DataOf<operations['getProjectsByProjectIdBackupPolicies']>[number];
export type PolicyBody = NonNullable<operations['postProjectsByProjectIdBackupPolicies']['requestBody']>['content']['application/json'];
export type PolicyPatch = NonNullable<operations['patchBackupPoliciesByPolicyId']['requestBody']>['content']['application/json'];
export type Run = DataOf<operations['getProjectsByProjectIdBackupRuns']>[number];
export type Restore = DataOf<operations['getBackupRestoresByRestoreId']>;
export type Service = DataOf<operations['getProjectsByIdServices']>[number];

/** SSE `transition` data of a run or restore. */
export interface Transition {
  from: string;
  to: string;
  at: string;
}
/** SSE `progress` data: runs `upload` / `verify`, restores `download` / `restore`. */
export interface ProgressEvent {
  phase: string;
  bytes: number;
  totalBytes?: number;
}

export const RUN_IN_FLIGHT = ['queued', 'running', 'uploading', 'verifying'];
export const inFlight = (status: string) => RUN_IN_FLIGHT.includes(status);

export const keys = {
  destinations: ['backup-destinations'] as const,
  policies: (projectId: string) => ['backup-policies', projectId] as const,
  runs: (projectId: string) => ['backup-runs', projectId] as const,
  run: (runId: string) => ['backup-run', runId] as const,
  restore: (restoreId: string) => ['backup-restore', restoreId] as const,
  services: (projectId: string) => ['project-services', projectId] as const,
};

export const destinationsQuery = () => ({
  queryKey: keys.destinations,
  queryFn: () => data(api.GET('/api/backup-destinations')),
});

export const servicesQuery = (projectId: string) => ({
  queryKey: keys.services(projectId),
  queryFn: () => data(api.GET('/api/projects/{id}/services', { params: { path: { id: projectId } } })),
});

export const policiesQuery = (projectId: string) => ({
  queryKey: keys.policies(projectId),
  queryFn: () => data(api.GET('/api/projects/{projectId}/backup-policies', { params: { path: { projectId } } })),
});

export const runsQuery = (projectId: string) => ({
  queryKey: keys.runs(projectId),
  queryFn: () => data(api.GET('/api/projects/{projectId}/backup-runs', { params: { path: { projectId }, query: { limit: 50 } } })),
});

/** Where a destination keeps its backups, in one line. */
export function destinationWhere(d: Destination): string {
  if (d.kind === 'local') return d.path ?? '';
  const prefix = d.prefix ? `/${d.prefix.replace(/^\/+/, '')}` : '';
  return `s3://${d.bucket ?? ''}${prefix}${d.endpoint ? ` at ${d.endpoint}` : d.region ? ` (${d.region})` : ''}`;
}

const KIND_LABEL: Record<string, string> = { postgres: 'PostgreSQL', mysql: 'MariaDB', redis: 'Redis', mongodb: 'MongoDB' };

/** "data (volume)" / "main (PostgreSQL database)" / "cache (Redis service)". */
export function serviceLabel(s: Service | undefined, id: string): string {
  if (!s) return id;
  if (s.kind === 'volume') return `${s.name} (volume)`;
  return `${s.name} (${KIND_LABEL[s.kind] ?? s.kind} ${s.managed ? 'service' : 'database'})`;
}

/** What the restore page needs from the page that prepared it: the one-time token (history state, never the URL). */
export interface PreparedState {
  confirmationToken: string;
  expiresAt: string;
}
