import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type ComponentProps } from 'react';
import { api, data, messageOf } from '../../api/client';
import type { paths } from '../../../../src/api-types/schema';
import { ConfirmDialog } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { projectQuery } from './shell';

/** What the settings pages share: the project's type, its optimistic PATCH, and optimistic controls. */

export type Project = Awaited<ReturnType<ReturnType<typeof projectQuery>['queryFn']>>;
export type ConfigPatch = paths['/api/projects/{id}']['patch']['requestBody']['content']['application/json'];

type Preview = (p: Project, body: ConfigPatch) => Project;

/**
 * PATCH /api/projects/:id, optimistic: the project in the cache takes the change at once (`preview`
 * says how) and goes back when the server refuses; the answer replaces it on success. Saves of the
 * same project still in flight (a second switch toggled before the first one's answer came) are
 * applied again over an answer or a refusal, so that a control never shows its old value in between.
 */
export function useProjectPatch(id: string, preview: Preview, done?: string) {
  const qc = useQueryClient();
  const toast = useToast();
  const key = projectQuery(id).queryKey;
  const mutationKey = ['project-patch', id];
  /** `base` with every other pending save of this project previewed over it, oldest first. */
  const withPending = (base: Project, self: ConfigPatch): Project =>
    qc
      .getMutationCache()
      .findAll({ mutationKey, status: 'pending' })
      .filter((m) => m.state.variables !== self)
      .reduce((p, m) => ((m.options.meta?.preview as Preview | undefined) ?? preview)(p, m.state.variables as ConfigPatch), base);
  return useMutation({
    mutationKey,
    meta: { preview },
    mutationFn: (body: ConfigPatch) => data(api.PATCH('/api/projects/{id}', { params: { path: { id } }, body })),
    onMutate: async (body) => {
      await qc.cancelQueries({ queryKey: key, exact: true });
      const prev = qc.getQueryData<Project>(key);
      if (prev) qc.setQueryData<Project>(key, preview(prev, body));
      return { prev };
    },
    onError: (err, body, ctx) => {
      if (ctx?.prev) qc.setQueryData(key, withPending(ctx.prev, body));
      toast(`Not saved: ${messageOf(err)}`, 'error');
    },
    onSuccess: (project, body) => {
      qc.setQueryData(key, withPending(project, body));
      if (done) toast(done);
    },
  });
}

/**
 * The value a control shows: what the user just chose, from the event on (the cache's optimistic
 * write reaches the page a tick later), until the cache holds the same value; `drop()` (on a
 * refusal) shows the cache's again.
 */
export function useShown<T>(value: T): [T, (v: T) => void, () => void] {
  const [chosen, setChosen] = useState<{ v: T } | null>(null);
  useEffect(() => {
    if (chosen && Object.is(chosen.v, value)) setChosen(null);
  }, [chosen, value]);
  return [chosen ? chosen.v : value, (v: T) => setChosen({ v }), () => setChosen(null)];
}

/**
 * A ConfirmDialog that exists only while open. On closing (unmounting), the focus goes back to the
 * control that opened it, while that control is still on the page.
 */
export function OpenConfirm(props: Omit<ComponentProps<typeof ConfirmDialog>, 'open'> & { open: boolean }) {
  return props.open ? <MountedConfirm {...props} /> : null;
}

function MountedConfirm(props: ComponentProps<typeof ConfirmDialog>) {
  const [opener] = useState(() => document.activeElement as HTMLElement | null);
  useEffect(
    () => () => {
      if (opener?.isConnected) setTimeout(() => opener.focus(), 0);
    },
    [opener],
  );
  return <ConfirmDialog {...props} open />;
}
