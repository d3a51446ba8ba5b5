import { api, data } from '../../api/client';

export const domainsKey = (id: string) => ['project', id, 'domains'] as const;

export const fetchDomains = (id: string) => data(api.GET('/api/projects/{id}/domains', { params: { path: { id } } }));
export type Domain = Awaited<ReturnType<typeof fetchDomains>>[number];
