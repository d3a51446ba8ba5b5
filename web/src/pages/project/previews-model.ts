/** Preview environments as the previews page sees them: their queries, what users do to them, and words about them. */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError, data } from '../../api/client';
import type { operations } from '../../../../src/api-types/schema';
import { useToast } from '../../ui/toast';
import { isActive, shortId, type Deployment } from './deploy-model';

export type Environment = operations['getProjectsByIdEnvironments']['responses'][200]['content']['application/json']['data'][number];
export type NewPreview = operations['postProjectsByIdEnvironments']['requestBody']['content']['application/json'];

/** How many deployments of one environment the page reads (the latest, the current, the ready ones to promote). */
const ENV_LIMIT = 20;
const LIVE_MS = 1500;

export const environmentsQuery = (projectId: string) => ({
  queryKey: ['project', projectId, 'environments'] as const,
  queryFn: () => data(api.GET('/api/projects/{id}/environments', { params: { path: { id: projectId } } })),
});

export const envDeploymentsQuery = (projectId: string, env: string) => ({
  queryKey: ['project', projectId, 'deployments', 'environment', env] as const,
  queryFn: () => data(api.GET('/api/projects/{id}/deployments', { params: { path: { id: projectId }, query: { environment: env, limit: ENV_LIMIT } } })),
});

/** One environment's deployments, newest first; refetched every 1.5 s while one of them is on its way. */
export function useEnvDeployments(projectId: string, env: string) {
  return useQuery({
    ...envDeploymentsQuery(projectId, env),
    refetchInterval: (q) => (q.state.data?.some(isActive) ? LIVE_MS : false),
  });
}

/** `pr-42` is the preview GitHub pull request 42 made (contract section 16); null for any other name. */
export function pullRequestOf(name: string): number | null {
  const m = /^pr-(\d+)$/.exec(name);
  return m ? Number(m[1]) : null;
}

/** A 403 (the caller may read the project, not change it) goes to the page, which then hides what would be refused. */
export type OnRefused = (err: ApiError) => void;
const reportRefusal = (onRefused: OnRefused) => (err: unknown) => {
  if (err instanceof ApiError && err.status === 403) onRefused(err);
};

/** POST environments: the new preview joins the list at once. */
export function useCreatePreview(projectId: string, onRefused: OnRefused) {
  const qc = useQueryClient();
  const toast = useToast();
  return useMutation({
    mutationFn: (body: NewPreview) => data(api.POST('/api/projects/{id}/environments', { params: { path: { id: projectId } }, body })),
    onError: reportRefusal(onRefused),
    onSuccess: (env) => {
      qc.setQueryData<Environment[]>(environmentsQuery(projectId).queryKey, (list) => (list ? [...list.filter((e) => e.name !== env.name), env] : list));
      qc.setQueryData<Deployment[]>(envDeploymentsQuery(projectId, env.name).queryKey, []);
      toast(`Preview ${env.name} created`);
      void qc.invalidateQueries({ queryKey: ['project', projectId], exact: true });
    },
  });
}

/** A new deployment of the preview (its branch, or the project's uploaded source); its row shows at once and is followed. */
export function useDeployPreview(projectId: string, env: string, onRefused: OnRefused) {
  const qc = useQueryClient();
  const toast = useToast();
  return useMutation({
    mutationFn: () => data(api.POST('/api/deployments', { body: { projectId, environment: env } })),
    onError: reportRefusal(onRefused),
    onSuccess: (d) => {
      qc.setQueryData<Deployment[]>(envDeploymentsQuery(projectId, env).queryKey, (list) => [d, ...(list ?? []).filter((x) => x.id !== d.id)]);
      toast(`Deployment ${shortId(d.id)} of ${env} queued`);
      void qc.invalidateQueries({ queryKey: ['project', projectId, 'deployments', 'list'] });
    },
  });
}

/** POST promote: a chosen ready deployment of the preview becomes production's release (no build). */
export function usePromote(projectId: string, env: string, onRefused: OnRefused) {
  const qc = useQueryClient();
  const toast = useToast();
  return useMutation({
    mutationFn: (deploymentId: string) => data(api.POST('/api/projects/{id}/environments/{env}/promote', { params: { path: { id: projectId, env } }, body: { deploymentId } })),
    onError: reportRefusal(onRefused),
    onSuccess: (d) => {
      qc.setQueryData<Deployment[]>(envDeploymentsQuery(projectId, 'production').queryKey, (list) =>
        [d, ...(list ?? []).filter((x) => x.id !== d.id)].map((x) => (d.current && x.id !== d.id ? { ...x, current: false } : x)),
      );
      toast(`Promoted: production runs ${shortId(d.id)} (from ${env})`);
      void qc.invalidateQueries({ queryKey: ['project', projectId] });
    },
  });
}

/** DELETE the environment: its card goes once the server has removed it (its app, releases, variables, volume and logs). */
export function useDeletePreview(projectId: string, onRefused: OnRefused) {
  const qc = useQueryClient();
  const toast = useToast();
  return useMutation({
    mutationFn: (env: string) => data(api.DELETE('/api/projects/{id}/environments/{env}', { params: { path: { id: projectId, env } } })),
    onError: reportRefusal(onRefused),
    onSuccess: (gone) => {
      qc.setQueryData<Environment[]>(environmentsQuery(projectId).queryKey, (list) => list?.filter((e) => e.name !== gone.name));
      qc.removeQueries({ queryKey: envDeploymentsQuery(projectId, gone.name).queryKey });
      toast(`Preview ${gone.name} deleted`);
      void qc.invalidateQueries({ queryKey: ['project', projectId, 'deployments', 'list'] });
    },
  });
}
