import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, data, messageOf } from '../../api/client';
import type { paths } from '../../../../src/api-types/schema';
import { Button, ErrorNotice, errorNames, Field, Input, Spinner } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { useShown, type Project } from './settings-common';
import { projectQuery } from './shell';

export const resourcesKey = (id: string) => ['project', id, 'resources'] as const;
const fetchResources = (id: string) => data(api.GET('/api/projects/{id}/resources', { params: { path: { id } } }));
type Resources = Awaited<ReturnType<typeof fetchResources>>;
type ResourcesPatch = paths['/api/projects/{id}/resources']['patch']['requestBody']['content']['application/json'];
type SleepMode = Resources['sleepMode'];

const LIMITS = [
  { part: 'production', key: 'cpuCores', label: 'CPU cores', step: '0.1', hint: 'More than 0, at most 4.' },
  { part: 'production', key: 'memoryMb', label: 'Memory (MB)', step: '1', hint: '64 to 65536.' },
  { part: 'production', key: 'diskMb', label: 'Disk (MB)', step: '1', hint: 'At least 128.' },
  { part: 'production', key: 'replicas', label: 'Replicas', step: '1', hint: 'Copies of the app (Docker Swarm only), 1 to 20.' },
  { part: 'build', key: 'cpuCores', label: 'CPU cores', step: '0.1', hint: 'More than 0, at most 4.' },
  { part: 'build', key: 'memoryMb', label: 'Memory (MB)', step: '1', hint: '64 to 65536.' },
  { part: 'build', key: 'diskMb', label: 'Disk (MB)', step: '1', hint: 'At least 128.' },
] as const;
type Limit = (typeof LIMITS)[number];
const nameOf = (l: Limit) => `${l.part}.${l.key}`;
const valueOf = (r: Resources, l: Limit): number => (l.part === 'production' ? r.production[l.key] : r.build[l.key as 'cpuCores' | 'memoryMb' | 'diskMb']);

/** Resources of the app and its builds, and sleep mode: GET/PATCH resources, POST sleep-mode. */
export function ResourcesSettings({ project }: { project: Project }) {
  const resources = useQuery({ queryKey: resourcesKey(project.id), queryFn: () => fetchResources(project.id) });
  if (resources.isPending) return <Spinner />;
  if (resources.error) return <ErrorNotice error={resources.error} title="Could not load the resources" />;
  return (
    <>
      <LimitsForm projectId={project.id} resources={resources.data} />
      <SleepModeSetting projectId={project.id} mode={resources.data.sleepMode} />
    </>
  );
}

function LimitsForm({ projectId, resources }: { projectId: string; resources: Resources }) {
  const qc = useQueryClient();
  const toast = useToast();
  const initial = () => Object.fromEntries(LIMITS.map((l) => [nameOf(l), String(valueOf(resources, l))]));
  const [form, setForm] = useState<Record<string, string>>(initial);
  const changes = (): ResourcesPatch => {
    const body: { production?: Record<string, number>; build?: Record<string, number> } = {};
    for (const l of LIMITS) {
      const v = form[nameOf(l)]!.trim();
      if (v === String(valueOf(resources, l))) continue;
      (body[l.part] ??= {})[l.key] = v === '' ? Number.NaN : Number(v);
    }
    return body as ResourcesPatch;
  };
  const save = useMutation({
    mutationFn: (body: ResourcesPatch) => data(api.PATCH('/api/projects/{id}/resources', { params: { path: { id: projectId } }, body })),
    onSuccess: (saved) => {
      qc.setQueryData(resourcesKey(projectId), saved);
      setForm(Object.fromEntries(LIMITS.map((l) => [nameOf(l), String(valueOf(saved, l))])));
      toast('Resources saved; they apply on the next deploy');
    },
  });
  const body = changes();
  const dirty = Object.keys(body).length > 0;
  const part = (which: 'production' | 'build', legend: string) => (
    <fieldset className="fieldset">
      <legend>{legend}</legend>
      <div className="form-grid">
        {LIMITS.filter((l) => l.part === which).map((l) => (
          <Field key={nameOf(l)} label={l.label} name={nameOf(l)} error={save.error} hint={l.hint}>
            {(p) => <Input {...p} type="number" step={l.step} min={l.key === 'cpuCores' ? 0.1 : 1} inputMode={l.step === '1' ? 'numeric' : 'decimal'} value={form[nameOf(l)]} onChange={(e) => setForm({ ...form, [nameOf(l)]: e.target.value })} />}
          </Field>
        ))}
      </div>
    </fieldset>
  );
  return (
    <form
      className="card"
      aria-labelledby="resources-title"
      onSubmit={(e) => {
        e.preventDefault();
        if (dirty) save.mutate(body);
      }}
    >
      <h2 id="resources-title">Resources</h2>
      {part('production', 'The running app')}
      {part('build', 'Builds')}
      {save.error && !LIMITS.some((l) => errorNames(save.error, nameOf(l))) ? <ErrorNotice error={save.error} title="Not saved" /> : null}
      <div className="form-actions">
        <Button type="submit" variant="primary" busy={save.isPending} disabled={!dirty}>
          Save resources
        </Button>
        <Button onClick={() => (setForm(initial()), save.reset())} disabled={!dirty || save.isPending}>
          Discard
        </Button>
      </div>
    </form>
  );
}

const MODES: Array<{ mode: SleepMode; label: string; hint: string }> = [
  { mode: 'always_on', label: 'Always on', hint: 'The app keeps running.' },
  { mode: 'auto_sleep', label: 'Sleep when idle', hint: 'The app stops after a while without requests and starts again on the next one (the first request waits).' },
];

/** Sleep mode, saved as it is chosen (optimistic: the choice shows at once and goes back on a refusal). */
function SleepModeSetting({ projectId, mode }: { projectId: string; mode: SleepMode }) {
  const qc = useQueryClient();
  const toast = useToast();
  const [shown, choose, drop] = useShown(mode);
  const set = useMutation({
    mutationFn: (sleepMode: SleepMode) => data(api.POST('/api/projects/{id}/sleep-mode', { params: { path: { id: projectId } }, body: { sleepMode } })),
    onMutate: async (sleepMode) => {
      await qc.cancelQueries({ queryKey: resourcesKey(projectId) });
      const prev = qc.getQueryData<Resources>(resourcesKey(projectId));
      if (prev) qc.setQueryData<Resources>(resourcesKey(projectId), { ...prev, sleepMode });
      return { prev };
    },
    onError: (err, _m, ctx) => {
      if (ctx?.prev) qc.setQueryData(resourcesKey(projectId), ctx.prev);
      drop();
      toast(`Sleep mode not changed: ${messageOf(err)}`, 'error');
    },
    onSuccess: (saved) => {
      qc.setQueryData(resourcesKey(projectId), saved);
      qc.setQueryData<Project>(projectQuery(projectId).queryKey, (p) => (p ? { ...p, sleepMode: saved.sleepMode } : p));
      toast(`Sleep mode: ${MODES.find((m) => m.mode === saved.sleepMode)?.label.toLowerCase()}`);
    },
  });
  return (
    <section className="card" aria-labelledby="sleep-title">
      <h2 id="sleep-title">Sleep mode</h2>
      <fieldset className="fieldset check-list">
        <legend className="sr-only">Sleep mode</legend>
        {MODES.map((m) => (
          <div key={m.mode}>
            <label className="check">
              <input type="radio" name="sleep-mode" value={m.mode} checked={shown === m.mode} onChange={() => (choose(m.mode), set.mutate(m.mode))} /> {m.label}
            </label>
            <span className="muted">{m.hint}</span>
          </div>
        ))}
      </fieldset>
    </section>
  );
}
