import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { Button, EmptyState, ErrorNotice, Spinner, StatusBadge, TimeAgo } from '../../ui/controls';
import { engineOf, resourcesText, servicesQuery, settling, type Service } from './api';
import { NewServiceForm } from './new-service';
import './services.css';

/** A project's services: the databases Berth runs beside its app (create, status), and what else it backs up. */
export default function ServicesPage({ params }: PageProps) {
  const projectId = params.id!;
  const canWrite = useAccess().project(projectId, 'write');
  const [creating, setCreating] = useState(false);
  const services = useQuery({ ...servicesQuery(projectId), refetchInterval: (q) => (settling(q.state.data) ? 1500 : 15_000) });
  const managed = services.data?.filter((s) => s.managed) ?? [];
  const others = services.data?.filter((s) => !s.managed) ?? [];
  return (
    <div className="services-page">
      <div className="page-header">
        <div>
          <h2>Services</h2>
          <p className="muted">Databases Berth runs for this project, reachable only from its app and builds.</p>
        </div>
        {canWrite && !creating ? (
          <div className="page-actions">
            <Button variant="primary" onClick={() => setCreating(true)}>
              New service
            </Button>
          </div>
        ) : null}
      </div>
      {creating ? <NewServiceForm projectId={projectId} onClose={() => setCreating(false)} /> : null}
      <ErrorNotice error={services.error} title="Could not load the services" />
      {services.isPending ? <Spinner /> : null}
      {services.data && managed.length === 0 && !creating ? (
        <EmptyState title="No services yet">
          <p>A service is a PostgreSQL, MariaDB or Redis database of the project's own. Its app gets its address and credentials as variables (<code>DATABASE_URL</code>, <code>REDIS_URL</code>).</p>
        </EmptyState>
      ) : null}
      <div className="svc-list">
        {managed.map((s) => (
          <ServiceCard key={s.id} projectId={projectId} s={s} />
        ))}
      </div>
      {others.length ? (
        <p className="muted svc-others">
          Also backed up with this project: {others.map((s) => `${s.name} (${s.kind === 'volume' ? 'data volume' : 'attached PostgreSQL'})`).join(', ')}.
        </p>
      ) : null}
    </div>
  );
}

function ServiceCard({ projectId, s }: { projectId: string; s: Service }) {
  return (
    <article className="card svc-card" aria-label={`Service ${s.name}`}>
      <div className="svc-card-head">
        <h3>
          <Link href={`/projects/${projectId}/services/${s.id}`}>{s.name}</Link>
        </h3>
        <StatusBadge status={s.status} />
      </div>
      <dl className="facts">
        <dt>Engine</dt>
        <dd>{engineOf(s)}</dd>
        <dt>Address</dt>
        <dd>{s.internalHost ? <code>{`${s.internalHost}:${s.port}`}</code> : <span className="muted">none while it is not running</span>}</dd>
        <dt>Resources</dt>
        <dd>{resourcesText(s.resources)}</dd>
        <dt>Created</dt>
        <dd>
          <TimeAgo at={s.createdAt} />
        </dd>
      </dl>
      {s.error ? <p className="svc-error">{s.error}</p> : null}
    </article>
  );
}
