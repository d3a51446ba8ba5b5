import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { api, data } from '../../api/client';

/** A project's info (runtime state and its URL): one cache entry shared by every page that shows it. */
export const infoQuery = (id: string) => ({
  queryKey: ['project', id, 'info'],
  queryFn: () => data(api.GET('/api/projects/{id}/info', { params: { path: { id } } })),
});

/**
 * The URL the edge serves `host` at, from the project's `runtime.url` (what "Open the app" opens):
 * its scheme and the edge's port, with `host` in place of its host. Only the server knows the edge's
 * port, so a link built from a domain alone (`http://<host>`) misses it whenever the edge is not on 80.
 */
export function urlOnEdge(runtimeUrl: string, host: string): string {
  const u = new URL(runtimeUrl);
  u.hostname = host;
  return u.origin;
}

/**
 * The URL of one of the project's hosts (its primary domain by default) as the edge serves it, once
 * the project's info has answered; undefined until then (and when it cannot be read).
 */
export function useAppUrl(projectId: string, host?: string): string | undefined {
  const info = useQuery({ ...infoQuery(projectId), staleTime: 15_000 });
  const url = info.data?.runtime.url;
  if (!url) return undefined;
  return host ? urlOnEdge(url, host) : url;
}

/**
 * A link to a project's host on the edge (`children`, the host by default, as its text). The text
 * shows at once; it becomes a link when the URL with the edge's port is known.
 */
export function EdgeLink({ projectId, host, className, children }: { projectId: string; host: string; className?: string; children?: ReactNode }) {
  const href = useAppUrl(projectId, host);
  const text = children ?? host;
  if (!href) return <span className={className}>{text}</span>;
  return (
    <a className={className} href={href} target="_blank" rel="noreferrer">
      {text}
    </a>
  );
}
