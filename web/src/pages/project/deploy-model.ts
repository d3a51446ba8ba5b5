/** Deployments as the pages see them: the record's type, its queries and the words about it. */
import { api, data } from '../../api/client';
import type { operations } from '../../../../src/api-types/schema';

export type Deployment = operations['getDeploymentsById']['responses'][200]['content']['application/json']['data'];

/** Statuses a deployment can still leave (the pages refresh while one is in them). */
export const ACTIVE = new Set(['queued', 'building', 'deploying']);
export const isActive = (d: Pick<Deployment, 'status'>) => ACTIVE.has(d.status);

export const LIST_LIMIT = 50;

/** The project's deployments, newest first (its own key: other pages may list fewer). */
export const deploymentsQuery = (projectId: string) => ({
  queryKey: ['project', projectId, 'deployments', 'list'] as const,
  queryFn: () => data(api.GET('/api/projects/{id}/deployments', { params: { path: { id: projectId }, query: { limit: LIST_LIMIT } } })),
});

export const deploymentQuery = (id: string) => ({
  queryKey: ['deployment', id] as const,
  queryFn: () => data(api.GET('/api/deployments/{id}', { params: { path: { id } } })),
});

/** An id as the pages show it: without its kind prefix (`dpl_`), 8 characters. */
export const shortId = (id: string) => id.replace(/^[a-z]+_/, '').slice(0, 8);

/** "1 m 05 s" from start to finish (or to now while it runs); a dash before it starts. */
export function duration(d: Pick<Deployment, 'startedAt' | 'finishedAt' | 'createdAt'>, now = Date.now()): string {
  const from = d.startedAt ?? null;
  if (!from) return '–';
  const ms = (d.finishedAt ? Date.parse(d.finishedAt) : now) - Date.parse(from);
  if (!Number.isFinite(ms) || ms < 0) return '–';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, '0')} s`;
}

/** What the deployment built: its commit (short) and ref, or how it came. */
export function sourceOf(d: Pick<Deployment, 'commit' | 'ref' | 'trigger'>): string {
  const parts = [d.commit ? d.commit.slice(0, 7) : null, d.ref].filter(Boolean);
  if (parts.length) return parts.join(' · ');
  return d.trigger === 'upload' ? 'uploaded folder' : '–';
}
