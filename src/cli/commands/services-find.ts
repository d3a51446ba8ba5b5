import { answer, type Answered, type ApiClient } from '../client.js';
import type { ProjectSummary } from '../link.js';

/** A service as `GET /api/projects/:id/services` lists it (contract section 19). */
export type Service = Answered<'/api/projects/{id}/services', 'get'>[number];

/** The kinds of managed services. */
export const KINDS = ['postgres', 'mysql', 'redis', 'mongodb'] as const;
export type Kind = (typeof KINDS)[number];

/** A managed service of the project by name or id; an error naming what there is otherwise. */
export async function findService(client: ApiClient, project: ProjectSummary, ref: string): Promise<Service> {
  const list = await answer(client.api.GET('/api/projects/{id}/services', { params: { path: { id: project.id } } }));
  const hit = list.find((s) => s.id === ref) ?? list.find((s) => s.name === ref);
  if (!hit) throw new Error(`no service "${ref}" in ${project.slug} (it has: ${list.map((s) => s.name).join(', ') || 'none'})`);
  if (!hit.managed) throw new Error(`${hit.name} is not a service Berth runs (${hit.kind === 'volume' ? 'the data volume' : 'an attached database'})`);
  return hit;
}
