import { useQueryClient } from '@tanstack/react-query';
import { api, data } from '../../api/client';
import type { operations } from '../../../../src/api-types/schema';

/** The services area's records as the API answers them (from the generated OpenAPI types). */
type Json<Op> = Op extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
type DataOf<Op> = Json<Op> extends { data: infer D } ? D : never;

export type Service = DataOf<operations['getProjectsByIdServices']>[number];
export type Kinds = DataOf<operations['getServicesKinds']>;
export type KindOffer = Kinds['runtimes'][number]['kinds'][number];
export type Credentials = DataOf<operations['getProjectsByIdServicesBySidCredentials']>;
export type CreateBody = NonNullable<operations['postProjectsByIdServices']['requestBody']>['content']['application/json'];
export type ServiceKind = KindOffer['kind'];

export const keys = {
  // The backups pages list the same services (their policies name one): one cache entry for both.
  services: (projectId: string) => ['project-services', projectId] as const,
  kinds: ['service-kinds'] as const,
};

export const servicesQuery = (projectId: string) => ({
  queryKey: keys.services(projectId),
  queryFn: () => data(api.GET('/api/projects/{id}/services', { params: { path: { id: projectId } } })),
});

export const kindsQuery = () => ({
  queryKey: keys.kinds,
  queryFn: () => data(api.GET('/api/services/kinds')),
  staleTime: 5 * 60_000,
});

const ENGINES: Record<string, string> = { postgres: 'PostgreSQL', mysql: 'MariaDB', redis: 'Redis', mongodb: 'MongoDB', volume: 'volume' };

/** "PostgreSQL 15", "Redis 7". */
export function engineOf(s: Pick<Service, 'kind' | 'version'>): string {
  return `${ENGINES[s.kind] ?? s.kind}${s.version ? ` ${s.version}` : ''}`;
}

/** A service's status while it settles: the list is read again until none is starting. */
export const settling = (list: Service[] | undefined) => !!list?.some((s) => s.managed && s.status === 'starting');

export function formatMemory(mb: number): string {
  return mb >= 1024 && mb % 1024 === 0 ? `${mb / 1024} GB` : `${mb} MB`;
}

/** "0.5 CPU · 512 MB memory · 1 GB disk". */
export function resourcesText(r: Service['resources']): string {
  if (!r) return '–';
  return `${r.cpuCores} CPU · ${formatMemory(r.memoryMb)} memory · ${formatMemory(r.diskMb)} disk`;
}

/** Replaces the service in the project's cached list with the server's answer. */
export function usePutService(projectId: string) {
  const qc = useQueryClient();
  return (s: Service) => qc.setQueryData<Service[]>(keys.services(projectId), (list) => list?.map((x) => (x.id === s.id ? s : x)));
}
