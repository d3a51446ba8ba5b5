import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { api, data } from '../../api/client';
import { Button, ErrorNotice, Field, Notice, Select, Spinner } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { EnvEditor } from './env-editor';
import { envKey, fetchEnv, type EnvSet } from './env-model';
import './settings.css';

/** Environment variables of one environment: secrets masked, edited with the merge PATCH. */
export default function EnvPage({ params }: PageProps) {
  const id = params.id!;
  const [environment, setEnvironment] = useState('production');
  const environments = useQuery({
    queryKey: ['project', id, 'environments'],
    queryFn: () => data(api.GET('/api/projects/{id}/environments', { params: { path: { id } } })),
  });
  const env = useQuery({ queryKey: envKey(id, environment), queryFn: () => fetchEnv(id, environment) });
  const names = environments.data?.map((e) => e.name) ?? ['production'];
  // Changing variables and deploying need write on the project: a read-only member gets the list only.
  const canWrite = useAccess().project(id, 'write');
  return (
    <div className="stack settings-page">
      <div className="section-head">
        <h2>Environment variables</h2>
        <Field label="Environment">
          {(p) => (
            <Select {...p} value={environment} onChange={(e) => setEnvironment(e.target.value)}>
              {(names.includes(environment) ? names : [environment, ...names]).map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </Select>
          )}
        </Field>
      </div>
      <ErrorNotice error={environments.error} title="Could not list the environments" />
      {canWrite ? <Redeploy projectId={id} environment={environment} /> : null}
      {env.isPending ? (
        <Spinner />
      ) : env.error ? (
        <ErrorNotice error={env.error} title="Could not load the variables" />
      ) : !canWrite ? (
        <EnvList set={env.data} environment={environment} />
      ) : (
        <EnvEditor
          key={environment}
          projectId={id}
          environment={environment}
          initial={env.data}
          current={env.data}
          onReload={async () => (await env.refetch()).data}
        />
      )}
    </div>
  );
}

/** The variables as a read-only member sees them: names, plain values, secrets masked. */
function EnvList({ set, environment }: { set: EnvSet; environment: string }) {
  if (set.vars.length === 0) return <p className="muted">No variables in {environment}.</p>;
  return (
    <div className="table-wrap">
      <table className="env-table">
        <caption className="sr-only">Variables of {environment} (read only)</caption>
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {set.vars.map((v) => (
            <tr key={v.key}>
              <td>
                <code className="env-key">{v.key}</code>
              </td>
              <td>
                {v.isSecret ? (
                  <span className="masked">
                    <span aria-hidden="true">••••••••</span>
                    <span className="sr-only">hidden secret value</span>
                  </span>
                ) : (
                  <code>{v.value}</code>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Variables reach the app on its next deploy: say so, and offer one. */
function Redeploy({ projectId, environment }: { projectId: string; environment: string }) {
  const toast = useToast();
  const deploy = useMutation({
    mutationFn: () => data(api.POST('/api/deployments', { body: { projectId, environment } })),
    onSuccess: () => toast(`Deployment of ${environment} queued`),
  });
  return (
    <>
      <Notice>
        <span className="row">
          <span>Changes apply on the next deploy of {environment}.</span>
          <Button small onClick={() => deploy.mutate()} busy={deploy.isPending}>
            Redeploy now
          </Button>
          {deploy.data ? (
            <Link href={`/projects/${projectId}/deployments/${deploy.data.id}`}>Follow deployment {deploy.data.id.slice(0, 12)}</Link>
          ) : null}
        </span>
      </Notice>
      <ErrorNotice error={deploy.error} title="Could not redeploy" />
    </>
  );
}
