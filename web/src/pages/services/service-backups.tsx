import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { Button, ErrorNotice, Spinner } from '../../ui/controls';
import { destinationsQuery, inFlight, policiesQuery, runsQuery } from '../backups/api';
import { Policies } from '../backups/policies';
import { Runs } from '../backups/runs';
import { servicesQuery, type Service } from './api';
import '../backups/backups.css';

/** The service's backup policies and runs (the backups pages' own views, kept to this service): run, protect, restore. */
export function ServiceBackups({ projectId, s }: { projectId: string; s: Service }) {
  const [creating, setCreating] = useState(false);
  const policies = useQuery(policiesQuery(projectId));
  const destinations = useQuery(destinationsQuery());
  const services = useQuery(servicesQuery(projectId));
  const runs = useQuery({ ...runsQuery(projectId), refetchInterval: (q) => (q.state.data?.some((r) => inFlight(r.status)) ? 3000 : 15000) });
  const mine = policies.data?.filter((p) => p.serviceId === s.id);
  const myRuns = runs.data?.filter((r) => r.serviceId === s.id);
  return (
    <section className="svc-backups backups-page" aria-labelledby="svc-backups">
      <div className="svc-section-head">
        <h3 id="svc-backups">Backups</h3>
        {!creating ? (
          <Button small onClick={() => setCreating(true)} disabled={!mine || !destinations.data || !services.data}>
            New policy
          </Button>
        ) : null}
      </div>
      <p className="muted">
        Backed up by its own dump ({s.kind === 'postgres' ? <code>pg_dump -Fc</code> : s.kind === 'mysql' ? <code>mariadb-dump --single-transaction</code> : s.kind === 'redis' ? 'the RDB file of a BGSAVE' : 'its dump'}), checked and kept as the{' '}
        <Link href={`/projects/${projectId}/backups`}>project's backups</Link> are. A restore prepares a fresh instance from the backup and swaps it in once it answers.
      </p>
      <ErrorNotice error={policies.error ?? destinations.error ?? services.error ?? runs.error} title="Could not load the backups" />
      {!mine || !destinations.data || !services.data ? <Spinner /> : <Policies projectId={projectId} policies={mine} destinations={destinations.data} services={services.data} creating={creating} serviceId={s.id} onCreated={() => setCreating(false)} />}
      {myRuns && myRuns.length > 0 ? <Runs projectId={projectId} runs={myRuns} destinations={destinations.data ?? []} services={services.data ?? []} /> : null}
    </section>
  );
}
