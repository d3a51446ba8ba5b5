import { useMutation, useQuery, useQueryClient, type UseQueryResult } from '@tanstack/react-query';
import { Link } from 'wouter';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { api, data } from '../../api/client';
import type { paths } from '../../../../src/api-types/schema';
import { Button, ErrorNotice, Notice, Spinner, StatusBadge, TimeAgo } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { EdgeLink, infoQuery } from './app-url';
import { OverviewMetrics } from './overview-metrics';
import { useProject } from './shell';
import './overview.css';

type Deployment = paths['/api/projects/{id}/deployments']['get']['responses'][200]['content']['application/json']['data'][number];
type Info = paths['/api/projects/{id}/info']['get']['responses'][200]['content']['application/json']['data'];
type Project = NonNullable<ReturnType<typeof useProject>['data']>;

/** A deployment still on its way (the overview refreshes itself meanwhile). */
const IN_PROGRESS = new Set(['queued', 'building', 'deploying']);
const REFRESH_MS = 3000;

const deploymentsKey = (id: string) => ['project', id, 'deployments', 'recent'];

/**
 * A project at a glance: status and runtime state, its URLs, the current deployment, the source,
 * and quick actions. While a deployment is in progress the deployments and the runtime state are
 * refetched every few seconds.
 */
export default function OverviewPage({ params }: PageProps) {
  const id = params.id!;
  const project = useProject(id);
  const deployments = useQuery({
    queryKey: deploymentsKey(id),
    queryFn: () => data(api.GET('/api/projects/{id}/deployments', { params: { path: { id }, query: { limit: 10 } } })),
    refetchInterval: (q) => (q.state.data?.some((d) => IN_PROGRESS.has(d.status)) ? REFRESH_MS : false),
  });
  const busy = deployments.data?.some((d) => IN_PROGRESS.has(d.status)) ?? false;
  const info = useQuery({
    ...infoQuery(id),
    refetchInterval: busy ? REFRESH_MS : false,
  });
  if (!project.data) return null; // the shell shows the project's loading and error
  const p = project.data;
  return (
    <div className="overview">
      <div className="overview-grid">
        <section className="card" aria-labelledby="ov-status">
          <h2 id="ov-status">Status</h2>
          <RuntimeFacts project={p} info={info} />
        </section>
        <section className="card" aria-labelledby="ov-urls">
          <h2 id="ov-urls">URLs</h2>
          <Urls project={p} info={info.data} />
        </section>
      </div>
      <section className="card" aria-labelledby="ov-deploy">
        <div className="overview-head">
          <h2 id="ov-deploy">Current deployment</h2>
          {busy ? <Spinner label="Deploying" /> : null}
        </div>
        <CurrentDeployment projectId={id} deployments={deployments} info={info.data} />
      </section>
      <OverviewMetrics projectId={id} />
      <div className="overview-grid">
        <section className="card" aria-labelledby="ov-source">
          <h2 id="ov-source">Source</h2>
          <Source source={info.data?.source ?? p.source} />
        </section>
        <section className="card" aria-labelledby="ov-actions">
          <h2 id="ov-actions">Quick actions</h2>
          <QuickActions project={p} busy={busy} />
        </section>
      </div>
    </div>
  );
}

function RuntimeFacts({ project: p, info }: { project: Project; info: UseQueryResult<Info> }) {
  const rt = info.data?.runtime;
  return (
    <>
      <ErrorNotice error={info.error} title="Could not load the runtime state" />
      <dl className="facts">
        <dt>Project</dt>
        <dd>
          <StatusBadge status={p.status} />
        </dd>
        <dt>Runtime</dt>
        <dd>{info.isPending ? <Spinner /> : rt ? <StatusBadge status={rt.state} /> : <span className="muted">unknown</span>}</dd>
        {rt?.state === 'degraded' && rt.reason ? (
          <>
            <dt>Degraded</dt>
            <dd className="runtime-reason" role="status">
              {rt.reason}
              {rt.degradedSince ? (
                <>
                  {' '}
                  <span className="muted">
                    (since <TimeAgo at={rt.degradedSince} />)
                  </span>
                </>
              ) : null}
            </dd>
          </>
        ) : null}
        {rt ? (
          <>
            <dt>Port</dt>
            <dd className="mono">{rt.port}</dd>
            <dt>Started</dt>
            <dd>{rt.startedAt ? <TimeAgo at={rt.startedAt} /> : <span className="muted">not running</span>}</dd>
            {rt.isolation ? (
              <>
                <dt>Isolation</dt>
                <dd>{rt.isolation}</dd>
              </>
            ) : null}
          </>
        ) : null}
        <dt>Sleep mode</dt>
        <dd>{p.sleepMode === 'auto_sleep' ? 'Sleeps when idle' : 'Always on'}</dd>
      </dl>
      {rt?.limitsNote ? <p className="muted overview-note">{rt.limitsNote}</p> : null}
    </>
  );
}

function Urls({ project: p, info }: { project: Project; info: Info | undefined }) {
  const primary = info?.runtime.url;
  const others = p.routes.domains.filter((d) => d.domain !== p.routes.primaryDomain);
  return (
    <ul className="overview-urls">
      <li>
        {primary ? (
          <a href={primary} target="_blank" rel="noreferrer">
            {primary}
          </a>
        ) : (
          <span>{p.routes.primaryDomain}</span>
        )}{' '}
        <span className="muted">(primary)</span>
      </li>
      {p.routes.freeDomain !== p.routes.primaryDomain ? (
        <li>
          <EdgeLink projectId={p.id} host={p.routes.freeDomain} />{' '}
          <span className="muted">(free domain)</span>
        </li>
      ) : null}
      {others.map((d) => (
        <li key={d.domain}>
          <span className="overview-domain">{d.domain}</span> <StatusBadge status={d.verified ? 'verified' : 'pending'} />
        </li>
      ))}
      <li>
        <Link href={`/projects/${p.id}/domains`}>Manage domains</Link>
      </li>
    </ul>
  );
}

function CurrentDeployment({ projectId, deployments, info }: { projectId: string; deployments: UseQueryResult<Deployment[]>; info: Info | undefined }) {
  if (deployments.isPending) return <Spinner />;
  if (deployments.error) return <ErrorNotice error={deployments.error} title="Could not load the deployments" />;
  const list = deployments.data;
  const latest = list[0];
  const current = list.find((d) => d.current);
  if (!latest) {
    return info?.build.lastDeploymentId ? (
      <p>
        Last build <StatusBadge status={info.build.status} />{' '}
        <Link href={`/projects/${projectId}/deployments/${info.build.lastDeploymentId}`}>View the deployment</Link>
      </p>
    ) : (
      <p className="muted">Not deployed yet. Use Redeploy below once the project has a source.</p>
    );
  }
  return (
    <>
      <DeploymentFacts projectId={projectId} d={latest} />
      {current && current.id !== latest.id ? (
        <Notice>
          Still serving the earlier release{' '}
          <Link href={`/projects/${projectId}/deployments/${current.id}`} className="mono">
            {current.id}
          </Link>{' '}
          (<TimeAgo at={current.finishedAt ?? current.createdAt} />) until this one is ready.
        </Notice>
      ) : null}
    </>
  );
}

function DeploymentFacts({ projectId, d }: { projectId: string; d: Deployment }) {
  return (
    <dl className="facts">
      <dt>Status</dt>
      <dd>
        <StatusBadge status={d.status} /> {d.current ? <span className="muted">serving</span> : null}
      </dd>
      <dt>Deployment</dt>
      <dd>
        <Link href={`/projects/${projectId}/deployments/${d.id}`} className="mono">
          {d.id}
        </Link>
      </dd>
      <dt>Environment</dt>
      <dd>{d.environment}</dd>
      <dt>Trigger</dt>
      <dd>{d.trigger}</dd>
      {d.commit || d.ref ? (
        <>
          <dt>Commit</dt>
          <dd className="mono">
            {d.commit ? d.commit.slice(0, 12) : ''}
            {d.ref ? ` (${d.ref})` : ''}
          </dd>
        </>
      ) : null}
      <dt>Created</dt>
      <dd>
        <TimeAgo at={d.createdAt} />
      </dd>
      {d.finishedAt ? (
        <>
          <dt>Finished</dt>
          <dd>
            <TimeAgo at={d.finishedAt} />
          </dd>
        </>
      ) : null}
      {d.error ? (
        <>
          <dt>Error</dt>
          <dd className="overview-error">{d.error}</dd>
        </>
      ) : null}
    </dl>
  );
}

function Source({ source: s }: { source: Project['source'] }) {
  if (s.type === 'none') return <p className="muted">No source yet: link a repository, import a local folder or upload one.</p>;
  return (
    <dl className="facts">
      <dt>Type</dt>
      <dd>{s.type === 'git' ? `Git${s.gitProvider ? ` (${s.gitProvider})` : ''}` : s.type === 'local' ? 'Local folder' : 'Upload'}</dd>
      {s.type === 'git' ? (
        <>
          <dt>Repository</dt>
          <dd className="mono">{s.gitOwner && s.gitRepo ? `${s.gitOwner}/${s.gitRepo}` : '–'}</dd>
          <dt>Branch</dt>
          <dd className="mono">{s.gitBranch ?? 'default'}</dd>
        </>
      ) : null}
      {s.type === 'local' && s.localPath ? (
        <>
          <dt>Folder</dt>
          <dd className="mono">{s.localPath}</dd>
        </>
      ) : null}
    </dl>
  );
}

function QuickActions({ project: p, busy }: { project: Project; busy: boolean }) {
  const qc = useQueryClient();
  const toast = useToast();
  const redeploy = useMutation({
    mutationFn: () => data(api.POST('/api/deployments', { body: { projectId: p.id } })),
    onSuccess: (d) => {
      // The new deployment leads the list at once; the refetch that follows keeps it fresh.
      qc.setQueryData<Deployment[]>(deploymentsKey(p.id), (old) => [d, ...(old ?? []).filter((x) => x.id !== d.id)]);
      void qc.invalidateQueries({ queryKey: ['project', p.id] });
      toast('Deployment queued');
    },
  });
  const noSource = p.source.type === 'none';
  // Deploying needs write on the project: a read-only member is not shown the button.
  const canDeploy = useAccess().project(p.id, 'write');
  return (
    <div className="stack">
      <div className="row">
        {canDeploy ? (
          <Button variant="primary" busy={redeploy.isPending} disabled={noSource || p.status === 'disabled'} onClick={() => redeploy.mutate()}>
            Redeploy
          </Button>
        ) : null}
        <Link href={`/projects/${p.id}/deployments`} className="btn">
          All deployments
        </Link>
        <Link href={`/projects/${p.id}/logs`} className="btn">
          Logs
        </Link>
      </div>
      {canDeploy && noSource ? <p className="muted">Redeploy needs a source.</p> : null}
      {canDeploy && p.status === 'disabled' ? <p className="muted">The project is disabled; enable it in Settings to deploy.</p> : null}
      {busy && !redeploy.isPending ? <p className="muted">A deployment is in progress; this page refreshes every few seconds.</p> : null}
      <ErrorNotice error={redeploy.error} title="Could not redeploy" />
      {redeploy.data ? (
        <p>
          <Link href={`/projects/${p.id}/deployments/${redeploy.data.id}`}>Follow the build log of the new deployment</Link>
        </p>
      ) : null}
    </div>
  );
}
