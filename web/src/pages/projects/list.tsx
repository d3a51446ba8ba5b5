import { useQuery } from '@tanstack/react-query';
import { useDeferredValue, useState } from 'react';
import { Link } from 'wouter';
import type { PageProps } from '../../app';
import { api, data } from '../../api/client';
import { useAccess } from '../../access';
import { useSession } from '../../session';
import { EmptyState, ErrorNotice, Field, Input, Spinner } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { ProjectCard, type ProjectRow } from './list-card';
import './list.css';

export const projectsQuery = { queryKey: ['projects'], queryFn: () => data(api.GET('/api/projects')) };

function matches(p: ProjectRow, q: string): boolean {
  const s = p.source;
  return [p.name, p.slug, p.routes.primaryDomain, p.status, s.gitOwner, s.gitRepo, s.localPath].some((v) => v?.toLowerCase().includes(q));
}

/** The active org's projects (those the caller can read), as cards, with a filter. */
export default function ProjectsPage(_: PageProps) {
  const me = useSession();
  const projects = useQuery(projectsQuery);
  const [filter, setFilter] = useState('');
  const q = useDeferredValue(filter.trim().toLowerCase());
  const all = projects.data ?? [];
  const shown = q ? all.filter((p) => matches(p, q)) : all;
  // A restricted member creates projects only through a `*` project grant (listed by /me): the button
  // is left out without it (the page at /new still answers, and the API decides).
  const mayCreate = useAccess().createProject;
  return (
    <>
      <PageHeader title="Projects" sub={me.org ? <>In {me.org.name}</> : undefined}>
        <Link href="/org/new" className="btn btn-ghost">
          New organization
        </Link>
        {mayCreate ? (
          <Link href="/new" className="btn btn-primary">
            New project
          </Link>
        ) : null}
      </PageHeader>
      {projects.isPending ? <Spinner label="Loading projects" /> : null}
      <ErrorNotice error={projects.error} title="Could not load the projects" />
      {projects.isSuccess && all.length === 0 ? (
        <EmptyState title="No projects yet">
          <p>A project deploys an app from a Git repository, a local folder or an upload.</p>
          {mayCreate ? (
            <Link href="/new" className="btn btn-primary">
              Create your first project
            </Link>
          ) : (
            <p>Projects appear here once an admin of {me.org?.name ?? 'this organization'} gives you access to them.</p>
          )}
        </EmptyState>
      ) : null}
      {all.length > 0 ? (
        <>
          <div className="project-filter" role="search">
            <Field label="Filter projects">
              {(p) => <Input {...p} type="search" value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="Name, domain or repository" autoComplete="off" />}
            </Field>
          </div>
          <p className="sr-only" role="status">
            {q ? `${shown.length} of ${all.length} projects match` : `${all.length} project${all.length === 1 ? '' : 's'}`}
          </p>
          {shown.length === 0 ? (
            <EmptyState title={`No project matches “${filter.trim()}”`}>
              <button type="button" className="btn" onClick={() => setFilter('')}>
                Clear the filter
              </button>
            </EmptyState>
          ) : (
            <ul className="grid project-list">
              {shown.map((p) => (
                <ProjectCard key={p.id} project={p} />
              ))}
            </ul>
          )}
        </>
      ) : null}
    </>
  );
}
