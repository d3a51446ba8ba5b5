import { useState } from 'react';
import { Link } from 'wouter';
import { Button, ErrorNotice, Field, Select, Spinner, StatusBadge, TimeAgo } from '../../ui/controls';
import { isActive, shortId, sourceOf, type Deployment } from './deploy-model';
import { useDeletePreview, useDeployPreview, useEnvDeployments, usePromote, pullRequestOf, type Environment, type OnRefused } from './previews-model';
import { OpenConfirm, type Project } from './settings-common';

/** What a deployment built, in words: its commit and ref, else how it came ("manual deploy"). */
export function builtFrom(d: Deployment): string {
  const s = sourceOf(d);
  return s === '–' ? `${d.trigger} deploy` : s;
}

/** A deployment in one line: its id (a link to its page and live build log), status, and what it built. */
export function DeploymentLine({ projectId, d }: { projectId: string; d: Deployment }) {
  return (
    <span className="pv-dep">
      <Link href={`/projects/${projectId}/deployments/${d.id}`} className="mono" aria-label={`Deployment ${shortId(d.id)}`}>
        {shortId(d.id)}
      </Link>{' '}
      <StatusBadge status={d.status} /> <span className="mono muted">{builtFrom(d)}</span> <span className="muted">·</span> <TimeAgo at={d.createdAt} />
    </span>
  );
}

/** Where the preview came from: a GitHub pull request (`pr-<n>`, linked when the repository is known) or made by hand. */
/** An environment's address as a link (its domain, else its URL). */
export function EnvLink({ env }: { env: Environment }) {
  return (
    <a href={env.url} target="_blank" rel="noreferrer" className="pv-url">
      {env.domain ?? env.url}
    </a>
  );
}

function Origin({ env, project }: { env: Environment; project: Project }) {
  const pr = pullRequestOf(env.name);
  if (pr === null) return <>Created by hand (dashboard, CLI or API)</>;
  const s = project.source;
  const href = s.gitProvider === 'github' && s.gitOwner && s.gitRepo ? `https://github.com/${s.gitOwner}/${s.gitRepo}/pull/${pr}` : null;
  return href ? (
    <a href={href} target="_blank" rel="noreferrer">
      Pull request #{pr}
    </a>
  ) : (
    <>Pull request #{pr}</>
  );
}

interface CardProps {
  projectId: string;
  project: Project;
  env: Environment;
  production: Deployment | undefined;
  canWrite: boolean;
  onRefused: OnRefused;
}

/** One preview: branch, URL, origin, its latest deployment (followed while it builds) and what can be done to it. */
export function PreviewCard({ projectId, project, env, production, canWrite, onRefused }: CardProps) {
  const deps = useEnvDeployments(projectId, env.name);
  const deploy = useDeployPreview(projectId, env.name, onRefused);
  const [asking, setAsking] = useState<'promote' | 'delete' | null>(null);
  const list = deps.data ?? [];
  const latest = list[0];
  const current = list.find((d) => d.current);
  const ready = list.filter((d) => d.status === 'ready');
  const building = latest && isActive(latest);
  const titleId = `pv-env-${env.id}`;
  const pr = pullRequestOf(env.name);
  return (
    <section className="card pv-card" aria-labelledby={titleId}>
      <div className="pv-card-head">
        <h3 id={titleId}>{env.name}</h3>
        {pr !== null ? <span className="badge badge-muted">PR #{pr}</span> : null}
        {building ? <Spinner label={latest.status === 'queued' ? 'Queued' : 'Building'} /> : null}
      </div>
      <dl className="facts">
        <dt>Branch</dt>
        <dd className="mono">{env.branch ?? <span className="muted">none (named after the environment)</span>}</dd>
        <dt>URL</dt>
        <dd>
          <EnvLink env={env} />
        </dd>
        <dt>From</dt>
        <dd>
          <Origin env={env} project={project} />
        </dd>
        <dt>Latest deployment</dt>
        <dd>
          {deps.isPending ? <Spinner /> : latest ? <DeploymentLine projectId={projectId} d={latest} /> : <span className="muted">not deployed yet</span>}
          {latest?.error ? <span className="pv-error"> {latest.error}</span> : null}
        </dd>
        {current && current.id !== latest?.id ? (
          <>
            <dt>Serving</dt>
            <dd>
              <DeploymentLine projectId={projectId} d={current} />
            </dd>
          </>
        ) : null}
        <dt>Runtime</dt>
        <dd>
          {current ? 'Sleeps when idle; its first request wakes it' : <span className="muted">nothing to run yet</span>}
          {current ? (
            <>
              {' · '}
              <Link href={`/projects/${projectId}/logs?environment=${encodeURIComponent(env.name)}`} aria-label={`Logs of ${env.name}`}>
                Logs
              </Link>
              {' · '}
              <Link href={`/projects/${projectId}/requests?environment=${encodeURIComponent(env.name)}`} aria-label={`Requests of ${env.name}`}>
                Requests
              </Link>
            </>
          ) : null}
        </dd>
        <dt>Created</dt>
        <dd>
          <TimeAgo at={env.createdAt} />
        </dd>
      </dl>
      <ErrorNotice error={deps.error} title="Could not load its deployments" />
      {canWrite ? (
        <div className="pv-actions">
          <Button small variant="primary" busy={deploy.isPending} disabled={building} onClick={() => deploy.mutate()} aria-label={`Deploy ${env.name}`}>
            Deploy
          </Button>
          <Button small disabled={ready.length === 0} onClick={() => setAsking('promote')} aria-label={`Promote ${env.name} to production`}>
            Promote to production
          </Button>
          <Button small variant="danger" onClick={() => setAsking('delete')} aria-label={`Delete ${env.name}`}>
            Delete
          </Button>
        </div>
      ) : null}
      {canWrite ? <ErrorNotice error={deploy.error} title="Could not deploy" /> : null}
      {asking === 'promote' ? <PromoteDialog projectId={projectId} env={env} ready={ready} current={current} production={production} onRefused={onRefused} onClose={() => setAsking(null)} /> : null}
      {asking === 'delete' ? <DeleteDialog projectId={projectId} env={env} onRefused={onRefused} onClose={() => setAsking(null)} /> : null}
    </section>
  );
}

interface PromoteProps {
  projectId: string;
  env: Environment;
  ready: Deployment[];
  current: Deployment | undefined;
  production: Deployment | undefined;
  onRefused: OnRefused;
  onClose(): void;
}

/** Which ready deployment production will run (the preview's current release unless another is chosen), and instead of what. */
function PromoteDialog({ projectId, env, ready, current, production, onRefused, onClose }: PromoteProps) {
  const promote = usePromote(projectId, env.name, onRefused);
  const [chosen, setChosen] = useState(() => (current?.status === 'ready' ? current.id : ready[0]?.id) ?? '');
  const target = ready.find((d) => d.id === chosen);
  return (
    <OpenConfirm
      open
      danger={false}
      title={`Promote ${env.name} to production?`}
      confirmLabel="Promote to production"
      busy={promote.isPending}
      error={promote.error}
      onCancel={onClose}
      onConfirm={() => target && promote.mutate(target.id, { onSuccess: onClose })}
    >
      <Field label="Deployment to promote" name="deploymentId" error={promote.error}>
        {(p) => (
          <Select {...p} value={chosen} onChange={(e) => setChosen(e.target.value)}>
            {ready.map((d) => (
              <option key={d.id} value={d.id}>
                {shortId(d.id)} · {builtFrom(d)} · {new Date(d.createdAt).toLocaleString()}
                {d.current ? ' (current)' : ''}
              </option>
            ))}
          </Select>
        )}
      </Field>
      {target ? (
        <p>
          Production will run deployment <code>{shortId(target.id)}</code> ({builtFrom(target)}, built for <strong>{env.name}</strong> <TimeAgo at={target.createdAt} />)
          {production ? (
            <>
              {' '}
              instead of its current release <code>{shortId(production.id)}</code> ({builtFrom(production)}, <TimeAgo at={production.createdAt} />)
            </>
          ) : (
            <> (production has no release yet)</>
          )}
          .
        </p>
      ) : null}
      <p className="muted">
        Nothing is rebuilt: the preview's build starts with production's variables and takes over once it answers; the current release serves until then. What the build baked in
        comes from the preview. Roll back from the deployments page.
      </p>
    </OpenConfirm>
  );
}

/** Deleting asks for the environment's name and says everything that goes with it. */
function DeleteDialog({ projectId, env, onRefused, onClose }: { projectId: string; env: Environment; onRefused: OnRefused; onClose(): void }) {
  const remove = useDeletePreview(projectId, onRefused);
  return (
    <OpenConfirm
      open
      title={`Delete the preview ${env.name}?`}
      confirmLabel="Delete preview"
      typeToConfirm={env.name}
      busy={remove.isPending}
      error={remove.error}
      onCancel={onClose}
      onConfirm={() => remove.mutate(env.name, { onSuccess: onClose })}
    >
      <p>
        Its builds are cancelled and its app stops; its deployments, build outputs, variables, volume and logs are deleted, and <span className="pv-url">{env.domain ?? env.url}</span> stops
        answering. Production is not touched. This cannot be undone.
      </p>
    </OpenConfirm>
  );
}
