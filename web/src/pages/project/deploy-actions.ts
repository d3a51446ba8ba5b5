/** What a user does to deployments: redeploy, cancel (optimistic), roll back. */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, data, messageOf } from '../../api/client';
import { useToast } from '../../ui/toast';
import { deploymentQuery, deploymentsQuery, shortId, type Deployment } from './deploy-model';

/** After any change: the list, the deployment and the project (its status and the overview) again. */
function useRefresh(projectId: string) {
  const qc = useQueryClient();
  return (id?: string) => {
    void qc.invalidateQueries({ queryKey: ['project', projectId] });
    if (id) void qc.invalidateQueries({ queryKey: deploymentQuery(id).queryKey });
  };
}

/** A new deployment of the project's current source; it shows in the list at once. */
export function useRedeploy(projectId: string) {
  const qc = useQueryClient();
  const toast = useToast();
  const refresh = useRefresh(projectId);
  return useMutation({
    // `noCache`: build without the project's build cache (nothing restored, nothing saved; docs/builds.md).
    mutationFn: (opts?: { noCache?: boolean }) => data(api.POST('/api/deployments', { body: { projectId, ...(opts?.noCache ? { noCache: true } : {}) } })),
    onSuccess: (d) => {
      qc.setQueryData<Deployment[]>(deploymentsQuery(projectId).queryKey, (list) => (list ? [d, ...list.filter((x) => x.id !== d.id)] : list));
      qc.setQueryData(deploymentQuery(d.id).queryKey, d);
      toast(`Deployment ${shortId(d.id)} queued`);
      refresh();
    },
  });
}

/**
 * Cancels a queued or running deployment. Optimistic: the row says "cancelled" at once, and goes
 * back to what it was if the server refuses (it may have finished meanwhile: 409).
 */
export function useCancel(projectId: string) {
  const qc = useQueryClient();
  const toast = useToast();
  const refresh = useRefresh(projectId);
  const listKey = deploymentsQuery(projectId).queryKey;
  return useMutation({
    mutationFn: (id: string) => data(api.POST('/api/deployments/{id}/cancel', { params: { path: { id } } })),
    onMutate: async (id) => {
      await qc.cancelQueries({ queryKey: listKey });
      await qc.cancelQueries({ queryKey: deploymentQuery(id).queryKey });
      const list = qc.getQueryData<Deployment[]>(listKey);
      const one = qc.getQueryData<Deployment>(deploymentQuery(id).queryKey);
      const mark = (d: Deployment): Deployment => (d.id === id ? { ...d, status: 'cancelled', finishedAt: d.finishedAt ?? new Date().toISOString() } : d);
      if (list) qc.setQueryData<Deployment[]>(listKey, list.map(mark));
      if (one) qc.setQueryData<Deployment>(deploymentQuery(id).queryKey, mark(one));
      return { list, one };
    },
    onError: (err, id, before) => {
      if (before?.list) qc.setQueryData(listKey, before.list);
      if (before?.one) qc.setQueryData(deploymentQuery(id).queryKey, before.one);
      toast(`Could not cancel ${shortId(id)}: ${messageOf(err)}`, 'error');
    },
    onSuccess: (d) => {
      qc.setQueryData(deploymentQuery(d.id).queryKey, d);
      toast(`Deployment ${shortId(d.id)} cancelled`);
    },
    onSettled: (_d, _e, id) => refresh(id),
  });
}

/** Switches the environment's current release to a kept ready deployment (no build). */
export function useRollback(projectId: string) {
  const toast = useToast();
  const refresh = useRefresh(projectId);
  return useMutation({
    mutationFn: (deploymentId: string) => data(api.POST('/api/projects/{id}/rollback', { params: { path: { id: projectId } }, body: { deploymentId } })),
    onSuccess: (d) => {
      toast(`Rolled back: ${shortId(d.id)} serves ${d.environment}`);
      refresh(d.id);
    },
  });
}
