import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { api, data } from '../../api/client';
import type { paths } from '../../../../src/api-types/schema';
import { StatusBadge, TimeAgo } from '../../ui/controls';
import { EdgeLink, infoQuery } from '../project/app-url';

export type ProjectRow = paths['/api/projects']['get']['responses'][200]['content']['application/json']['data'][number];

/** The newest deployment of a project (the list does not carry it): one small request per card. */
function useLastDeployment(id: string) {
  return useQuery({
    queryKey: ['project', id, 'deployments', 'last'],
    queryFn: async () => (await data(api.GET('/api/projects/{id}/deployments', { params: { path: { id }, query: { limit: 1 } } })))[0] ?? null,
    staleTime: 15_000,
  });
}

const SOURCE: Record<ProjectRow['source']['type'], string> = { git: 'Git', local: 'Local folder', upload: 'Upload', none: 'No source yet' };

function sourceLabel(p: ProjectRow): string {
  const s = p.source;
  if (s.type === 'git' && s.gitOwner && s.gitRepo) return `${s.gitOwner}/${s.gitRepo}${s.gitBranch ? ` (${s.gitBranch})` : ''}`;
  return SOURCE[s.type];
}

/** One project: its name (to its overview), status, URL, source and newest deployment. */
export function ProjectCard({ project: p }: { project: ProjectRow }) {
  const last = useLastDeployment(p.id);
  const d = last.data;
  // The same cached info the card's link reads: the app's runtime state (degraded, with why).
  const rt = useQuery({ ...infoQuery(p.id), staleTime: 15_000 }).data?.runtime;
  return (
    <li className="card project-card">
      <div className="project-card-head">
        <h2 className="project-card-name">
          <Link href={`/projects/${p.id}`}>{p.name}</Link>
        </h2>
        <StatusBadge status={p.status} />
      </div>
      <EdgeLink className="project-card-url" projectId={p.id} host={p.routes.primaryDomain} />
      <dl className="project-card-facts">
        <dt>Last deployment</dt>
        <dd>
          {last.isPending ? (
            <span className="muted">…</span>
          ) : d ? (
            <Link href={`/projects/${p.id}/deployments/${d.id}`} title={`Deployment ${d.id}`}>
              <StatusBadge status={d.status} /> <TimeAgo at={d.createdAt} />
            </Link>
          ) : last.error ? (
            <span className="muted">unavailable</span>
          ) : (
            <span className="muted">never deployed</span>
          )}
        </dd>
        {rt ? (
          <>
            <dt>App</dt>
            <dd>
              <StatusBadge status={rt.state} />
              {rt.state === 'degraded' && rt.reason ? <span className="project-card-reason">{rt.reason}</span> : null}
            </dd>
          </>
        ) : null}
        <dt>Source</dt>
        <dd>{sourceLabel(p)}</dd>
      </dl>
    </li>
  );
}
