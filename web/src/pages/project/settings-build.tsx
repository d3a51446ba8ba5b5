import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, data } from '../../api/client';
import { Button, ErrorNotice, errorNames, Field, Input } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import type { ConfigPatch, Project } from './settings-common';
import { projectQuery } from './shell';

type TextKey = 'installCommand' | 'buildCommand' | 'startCommand' | 'outputDirectory' | 'rootDirectory' | 'runtime';

const TEXT_FIELDS: Array<{ key: TextKey; label: string; hint: string; placeholder?: string }> = [
  { key: 'installCommand', label: 'Install command', hint: 'Empty: detected from the lockfile.', placeholder: 'e.g. npm ci' },
  { key: 'buildCommand', label: 'Build command', hint: 'Empty: the detected build, if any.', placeholder: 'e.g. npm run build' },
  { key: 'startCommand', label: 'Start command', hint: 'Must listen on $PORT. Empty: detected.', placeholder: 'e.g. node server.js' },
  { key: 'rootDirectory', label: 'Root directory', hint: 'The folder of the app inside the source. Empty: its top.', placeholder: 'e.g. apps/web' },
  { key: 'outputDirectory', label: 'Output directory', hint: 'Where a static build lands.', placeholder: 'e.g. dist' },
  { key: 'runtime', label: 'Runtime', hint: 'Empty: detected from the source.', placeholder: 'e.g. node' },
];
const RUNTIMES = ['node', 'bun', 'deno', 'python', 'go', 'ruby', 'php', 'rust', 'java', 'elixir', 'dotnet', 'static', 'docker'];

/** Build settings (PATCH /api/projects/:id): commands, folders, port, runtime. Only changed fields are sent. */
export function BuildSettings({ project }: { project: Project }) {
  const qc = useQueryClient();
  const toast = useToast();
  const initial = () => ({
    ...(Object.fromEntries(TEXT_FIELDS.map((f) => [f.key, project.config[f.key] ?? ''])) as Record<TextKey, string>),
    port: String(project.config.port),
  });
  const [form, setForm] = useState(initial);
  const changes = (): ConfigPatch => {
    const body: ConfigPatch = {};
    for (const f of TEXT_FIELDS) {
      const v = form[f.key].trim();
      if (v !== (project.config[f.key] ?? '')) body[f.key] = v === '' ? null : v;
    }
    if (form.port.trim() !== String(project.config.port)) body.port = Number(form.port);
    return body;
  };
  const save = useMutation({
    mutationFn: (body: ConfigPatch) => data(api.PATCH('/api/projects/{id}', { params: { path: { id: project.id } }, body })),
    onSuccess: (saved) => {
      qc.setQueryData(projectQuery(project.id).queryKey, saved);
      void qc.invalidateQueries({ queryKey: ['project', project.id, 'resources'] });
      toast('Build settings saved; they apply on the next deploy');
    },
  });
  const dirty = Object.keys(changes()).length > 0;
  const names = [...TEXT_FIELDS.map((f) => f.key), 'port'];
  return (
    <form
      className="card"
      aria-labelledby="build-title"
      onSubmit={(e) => {
        e.preventDefault();
        if (dirty) save.mutate(changes());
      }}
    >
      <h2 id="build-title">Build and run</h2>
      <div className="form-grid">
        {TEXT_FIELDS.map((f) => (
          <Field key={f.key} label={f.label} name={f.key} error={save.error} hint={f.hint}>
            {(p) => (
              <Input {...p} value={form[f.key]} onChange={(e) => setForm({ ...form, [f.key]: e.target.value })} placeholder={f.placeholder} spellCheck={false} autoComplete="off" list={f.key === 'runtime' ? 'runtimes' : undefined} />
            )}
          </Field>
        ))}
        <Field label="Port" name="port" error={save.error} hint="The port the app listens on ($PORT).">
          {(p) => <Input {...p} type="number" min={1} max={65535} step={1} inputMode="numeric" value={form.port} onChange={(e) => setForm({ ...form, port: e.target.value })} />}
        </Field>
      </div>
      <datalist id="runtimes">
        {RUNTIMES.map((r) => (
          <option key={r} value={r} />
        ))}
      </datalist>
      {save.error && !names.some((n) => errorNames(save.error, n)) ? <ErrorNotice error={save.error} title="Not saved" /> : null}
      <div className="form-actions">
        <Button type="submit" variant="primary" busy={save.isPending} disabled={!dirty}>
          Save build settings
        </Button>
        <Button onClick={() => (setForm(initial()), save.reset())} disabled={!dirty || save.isPending}>
          Discard
        </Button>
      </div>
    </form>
  );
}
