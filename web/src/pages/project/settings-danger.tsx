import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { api, data } from '../../api/client';
import { Button, ErrorNotice, Spinner, StatusBadge } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { OpenConfirm, type Project } from './settings-common';
import { projectQuery } from './shell';

/** Enabled (deploys allowed, served) or disabled (offline): POST enable / disable. Disabling asks first. */
export function ProjectStatus({ project }: { project: Project }) {
  const qc = useQueryClient();
  const toast = useToast();
  const [asking, setAsking] = useState(false);
  const set = useMutation({
    mutationFn: (to: 'enable' | 'disable') =>
      data(to === 'enable' ? api.POST('/api/projects/{id}/enable', { params: { path: { id: project.id } } }) : api.POST('/api/projects/{id}/disable', { params: { path: { id: project.id } } })),
    onSuccess: (saved) => {
      qc.setQueryData(projectQuery(project.id).queryKey, saved);
      void qc.invalidateQueries({ queryKey: ['project', project.id] });
      toast(saved.status === 'enabled' ? 'Project enabled' : 'Project disabled');
      setAsking(false);
    },
  });
  const enabled = project.status === 'enabled';
  return (
    <section className="card" aria-labelledby="status-title">
      <h2 id="status-title">Status</h2>
      <p>
        The project is <StatusBadge status={project.status} />.{' '}
        {enabled ? 'It deploys and the edge serves it.' : 'Deploys are paused and the edge answers 503 for it.'}
      </p>
      {enabled ? (
        <Button variant="danger" onClick={() => (set.reset(), setAsking(true))}>
          Disable project
        </Button>
      ) : (
        <Button variant="primary" busy={set.isPending} onClick={() => set.mutate('enable')}>
          Enable project
        </Button>
      )}
      {!asking ? <ErrorNotice error={set.error} /> : null}
      <OpenConfirm open={asking} title={`Disable ${project.name}?`} confirmLabel="Disable project" busy={set.isPending} error={set.error} onConfirm={() => set.mutate('disable')} onCancel={() => setAsking(false)}>
        <p>The app is taken offline (the edge answers 503) and deploys are refused until you enable it again. Its releases, data and settings are kept.</p>
      </OpenConfirm>
    </section>
  );
}

const GROUPS: Record<string, [string, string]> = {
  deployments: ['deployment', 'deployments'],
  envVars: ['environment variable', 'environment variables'],
  domains: ['domain', 'domains'],
  environments: ['environment', 'environments'],
  backupPolicies: ['backup policy', 'backup policies'],
  backupRuns: ['backup run', 'backup runs'],
  services: ['service', 'services'],
  routeRules: ['route rule', 'route rules'],
};
/** `envVars`, 3 -> "environment variables" (other areas' groups: their key in words). */
function words(k: string, n: number): string {
  const known = GROUPS[k];
  if (known) return known[n === 1 ? 0 : 1];
  return k.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

/** Deleting the project: the confirmation lists what goes (deletion preview) and asks for the name. */
export function DangerZone({ project }: { project: Project }) {
  const qc = useQueryClient();
  const toast = useToast();
  const [, navigate] = useLocation();
  const [asking, setAsking] = useState(false);
  const preview = useQuery({
    queryKey: ['project', project.id, 'deletion-preview'],
    queryFn: () => data(api.GET('/api/projects/{id}/deletion-preview', { params: { path: { id: project.id } } })),
    enabled: asking,
    staleTime: 0,
  });
  const remove = useMutation({
    mutationFn: () => data(api.DELETE('/api/projects/{id}', { params: { path: { id: project.id } } })),
    onSuccess: () => {
      setAsking(false);
      navigate('/');
      // Once the project's pages have gone (else they would ask for it again and meet a 404).
      setTimeout(() => {
        qc.removeQueries({ queryKey: ['project', project.id] });
        void qc.invalidateQueries();
      }, 0);
      toast(`${project.name} deleted`);
    },
  });
  const groups = preview.data ? Object.entries(preview.data).filter(([, g]) => g.count > 0) : [];
  return (
    <section className="card danger-zone" aria-labelledby="danger-title">
      <h2 id="danger-title">Danger zone</h2>
      <p>Deleting the project removes its deployments, releases, variables, domains, rules, backups records and data volume. It cannot be undone.</p>
      <Button variant="danger" onClick={() => (remove.reset(), setAsking(true))}>
        Delete project
      </Button>
      <OpenConfirm
        open={asking}
        title={`Delete ${project.name}?`}
        confirmLabel="Delete project forever"
        typeToConfirm={project.name}
        busy={remove.isPending}
        error={remove.error ?? preview.error}
        onConfirm={() => remove.mutate()}
        onCancel={() => setAsking(false)}
      >
        {preview.isPending ? (
          <Spinner label="Listing what will be deleted" />
        ) : groups.length === 0 ? (
          <p>The project has nothing else recorded: only its settings go.</p>
        ) : (
          <>
            <p>This deletes, with the project:</p>
            <ul className="preview-list">
              {groups.map(([k, g]) => (
                <li key={k}>
                  <strong>
                    {g.count} {words(k, g.count)}
                  </strong>
                  {g.names.length ? (
                    <span className="muted">
                      : {g.names.slice(0, 5).join(', ')}
                      {g.count > 5 ? ` and ${g.count - 5} more` : ''}
                    </span>
                  ) : null}
                </li>
              ))}
            </ul>
          </>
        )}
      </OpenConfirm>
    </section>
  );
}
