import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { messageOf, type ApiError } from '../../api/client';
import { EmptyState, ErrorNotice, Notice, Spinner } from '../../ui/controls';
import { isActive, shortId } from './deploy-model';
import { DeploymentLine, EnvLink, PreviewCard } from './previews-card';
import { NewPreviewForm } from './previews-form';
import { environmentsQuery, useEnvDeployments, type Environment } from './previews-model';
import { useProject } from './shell';
import './previews.css';

/** What production runs now (a promotion changes it here), and its URL. */
function ProductionCard({ projectId, env }: { projectId: string; env: Environment | undefined }) {
  const deps = useEnvDeployments(projectId, 'production');
  const list = deps.data ?? [];
  const current = list.find((d) => d.current);
  const from = current?.promotedFrom;
  const running = list.find(isActive);
  return (
    <section className="card" aria-labelledby="pv-prod">
      <div className="pv-card-head">
        <h3 id="pv-prod">Production</h3>
        {running ? <Spinner label="Deploying" /> : null}
      </div>
      <dl className="facts">
        {env ? (
          <>
            <dt>URL</dt>
            <dd>
              <EnvLink env={env} />
            </dd>
          </>
        ) : null}
        <dt>Current release</dt>
        <dd>{deps.isPending ? <Spinner /> : current ? <DeploymentLine projectId={projectId} d={current} /> : <span className="muted">none yet</span>}</dd>
        {current ? (
          <>
            <dt>Trigger</dt>
            <dd>{from ? <>promoted from the preview deployment <span className="mono">{shortId(from)}</span></> : current.trigger}</dd>
          </>
        ) : null}
      </dl>
      <ErrorNotice error={deps.error} title="Could not load production's deployments" />
    </section>
  );
}

/**
 * A project's preview environments: each one's branch, URL, origin and latest deployment (live
 * while it builds); create, deploy, promote to production and delete. A member the server refuses
 * (a 403: read access only) sees the previews without the controls, and why.
 */
export default function PreviewsPage({ params }: PageProps) {
  const projectId = params.id!;
  const project = useProject(projectId);
  const envs = useQuery(environmentsQuery(projectId));
  const [refusal, setRefusal] = useState<ApiError | null>(null);
  const access = useAccess();
  const production = useEnvDeployments(projectId, 'production').data?.find((d) => d.current);
  if (!project.data) return null; // the shell shows the project's loading and error
  const previews = (envs.data ?? []).filter((e) => e.type === 'preview');
  // Creating, deploying, promoting and deleting previews need write on the project (the API decides; a
  // refusal met meanwhile, e.g. a grant removed, hides the controls too).
  const canWrite = access.project(projectId, 'write') && refusal === null;
  return (
    <div className="previews">
      <div className="page-header">
        <div>
          <h2>Previews</h2>
          <p className="muted">Each preview runs a branch at a URL of its own, with its own variables and volume, and sleeps when idle. A ready preview can be promoted to production without a rebuild.</p>
        </div>
      </div>
      {refusal ? (
        <Notice kind="warn">
          <strong>Read only: </strong>
          {messageOf(refusal)}. You can see this project's previews; creating, deploying, promoting or deleting them needs write access to the project.
        </Notice>
      ) : null}
      <ProductionCard projectId={projectId} env={envs.data?.find((e) => e.type === 'production')} />
      {envs.isPending ? <Spinner /> : null}
      <ErrorNotice error={envs.error} title="Could not load the environments" />
      {envs.data && previews.length === 0 ? (
        <EmptyState title="No preview environments yet">
          <p>
            Create one below for a branch. With the GitHub App installed and auto-deploy on, each pull request gets its own (<code>pr-&lt;number&gt;</code>).
          </p>
        </EmptyState>
      ) : null}
      <div className="pv-list">
        {previews.map((env) => (
          <PreviewCard key={env.id} projectId={projectId} project={project.data} env={env} production={production} canWrite={canWrite} onRefused={setRefusal} />
        ))}
      </div>
      {canWrite ? <NewPreviewForm projectId={projectId} onRefused={setRefusal} /> : null}
    </div>
  );
}
