import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import type { PageProps } from '../../app';
import { Button, ErrorNotice, Spinner } from '../../ui/controls';
import { destinationsQuery, inFlight, policiesQuery, runsQuery, servicesQuery } from './api';
import { Policies } from './policies';
import { Runs } from './runs';
import './backups.css';

/** A project's backups: its policies (where, what, when, how long) and its runs, live. */
export default function ProjectBackupsPage({ params }: PageProps) {
  const projectId = params.id!;
  const [creating, setCreating] = useState(false);
  const policies = useQuery(policiesQuery(projectId));
  const destinations = useQuery(destinationsQuery());
  const services = useQuery(servicesQuery(projectId));
  const runs = useQuery({
    ...runsQuery(projectId),
    // Runs in flight report through their streams; this also catches runs a schedule or webhook starts.
    refetchInterval: (q) => (q.state.data?.some((r) => inFlight(r.status)) ? 3000 : 15000),
  });
  const loading = policies.isPending || destinations.isPending || services.isPending;
  return (
    <div className="backups-page">
      <div className="page-header">
        <div>
          <h2>Backup policies</h2>
          <p className="muted">
            Backups go to the organization's <Link href="/backups/destinations">backup destinations</Link>.
          </p>
        </div>
        {!creating ? (
          <div className="page-actions">
            <Button variant="primary" onClick={() => setCreating(true)} disabled={loading}>
              New policy
            </Button>
          </div>
        ) : null}
      </div>
      <ErrorNotice error={policies.error ?? destinations.error ?? services.error} title="Could not load the backup policies" />
      {loading ? (
        <Spinner />
      ) : policies.data && destinations.data && services.data ? (
        <Policies projectId={projectId} policies={policies.data} destinations={destinations.data} services={services.data} creating={creating} onCreated={() => setCreating(false)} />
      ) : null}
      <h2>Backup runs</h2>
      <ErrorNotice error={runs.error} title="Could not load the backup runs" />
      {runs.isPending ? <Spinner /> : null}
      {runs.data ? <Runs projectId={projectId} runs={runs.data} destinations={destinations.data ?? []} services={services.data ?? []} /> : null}
    </div>
  );
}
