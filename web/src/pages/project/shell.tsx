import { useQuery } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { useAccess, type Level } from '../../access';
import { api, data } from '../../api/client';
import { ErrorNotice, Spinner, StatusBadge } from '../../ui/controls';
import { EdgeLink, infoQuery } from './app-url';

export const projectQuery = (id: string) => ({
  queryKey: ['project', id],
  queryFn: () => data(api.GET('/api/projects/{id}', { params: { path: { id } } })),
});

/** The project a page under /projects/:id is about (cached; the shell loads it first). */
export function useProject(id: string) {
  return useQuery(projectQuery(id));
}

/** The project's tabs; `level`: shown only to a member holding it on the project (src/authz). */
const TABS: Array<{ path: string; label: string; level?: Level }> = [
  { path: '', label: 'Overview' },
  { path: '/deployments', label: 'Deployments' },
  { path: '/previews', label: 'Previews' },
  { path: '/logs', label: 'Logs' },
  { path: '/requests', label: 'Requests' },
  { path: '/metrics', label: 'Metrics' },
  { path: '/env', label: 'Environment' },
  { path: '/domains', label: 'Domains' },
  { path: '/rules', label: 'Route rules' },
  { path: '/services', label: 'Services' },
  { path: '/backups', label: 'Backups', level: 'write' },
  { path: '/settings', label: 'Settings', level: 'write' },
];

/** Every project page: the project's name and status, its tabs, then the page. */
export function ProjectShell({ id, children }: { id: string; children: ReactNode }) {
  const project = useProject(id);
  // The cached info the head's link reads too: a degraded app says so (and why) on every tab.
  const rt = useQuery({ ...infoQuery(id), staleTime: 15_000 }).data?.runtime;
  const access = useAccess();
  const [location] = useLocation();
  const base = `/projects/${id}`;
  if (project.isPending) return <Spinner />;
  if (project.error) return <ErrorNotice error={project.error} title="Could not load the project" />;
  const p = project.data;
  const current = TABS.slice()
    .reverse()
    .find((t) => (t.path === '' ? location === base : location.startsWith(base + t.path)));
  return (
    <div className="project">
      <div className="project-head">
        <h1>
          {p.name} <StatusBadge status={p.status} />
        </h1>
        <EdgeLink className="muted project-url" projectId={p.id} host={p.routes.primaryDomain} />
      </div>
      {rt?.state === 'degraded' && current?.path !== '' ? (
        <div className="notice notice-warn project-degraded" role="status">
          <strong>The app is degraded</strong>
          {rt.reason ? `: ${rt.reason}` : ''} <Link href={base}>Overview</Link>
        </div>
      ) : null}
      <nav className="tabs" aria-label="Project">
        {TABS.filter((t) => !t.level || access.project(id, t.level)).map((t) => (
          <Link key={t.path} href={base + t.path} className={current === t ? 'tab active' : 'tab'} aria-current={current === t ? 'page' : undefined}>
            {t.label}
          </Link>
        ))}
      </nav>
      <section className="project-body">{children}</section>
    </div>
  );
}
