import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useLocation } from 'wouter';
import { api, data } from '../../api/client';
import { Button, ErrorNotice, Field, Input, Select, Spinner } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { keys, kindsQuery, type CreateBody, type Service, type ServiceKind } from './api';

const FIELDS = ['kind', 'name', 'version', 'resources'];
const NAMES: Record<string, string> = { postgres: 'db', mysql: 'db', redis: 'cache', mongodb: 'docs' };

/** '' leaves the server's default; anything else goes as a number for the API to judge. */
const num = (s: string): number | undefined => (s.trim() === '' ? undefined : Number(s));

/** Kind and version (from what this server's runtime offers), name and resources of a new managed service. */
export function NewServiceForm({ projectId, onClose }: { projectId: string; onClose(): void }) {
  const kinds = useQuery(kindsQuery());
  const qc = useQueryClient();
  const toast = useToast();
  const [, navigate] = useLocation();
  const here = kinds.data?.runtimes.find((r) => r.runtime === kinds.data.runtime);
  const offers = here?.kinds ?? [];
  const [kind, setKind] = useState<ServiceKind | ''>('');
  const [version, setVersion] = useState('');
  const [name, setName] = useState('');
  const [cpu, setCpu] = useState('');
  const [memory, setMemory] = useState('');
  const [disk, setDisk] = useState('');
  const chosen = offers.find((o) => o.kind === kind) ?? offers[0];
  const create = useMutation({
    mutationFn: (body: CreateBody) => data(api.POST('/api/projects/{id}/services', { params: { path: { id: projectId } }, body })),
    onSuccess: (s: Service) => {
      qc.setQueryData<Service[]>(keys.services(projectId), (list) => (list ? [...list, s] : list));
      void qc.invalidateQueries({ queryKey: keys.services(projectId) });
      toast(`${s.name} created: it is starting`);
      navigate(`/projects/${projectId}/services/${s.id}`);
    },
  });
  if (kinds.isPending) return <Spinner />;
  if (kinds.error) return <ErrorNotice error={kinds.error} title="Could not load the kinds of service" />;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!chosen) return;
    const resources = { cpuCores: num(cpu), memoryMb: num(memory), diskMb: num(disk) };
    const any = Object.values(resources).some((v) => v !== undefined);
    create.mutate({ kind: chosen.kind, name: name.trim() || NAMES[chosen.kind]!, version: version || chosen.defaultVersion, ...(any ? { resources } : {}) });
  };
  const err = create.error;
  return (
    <form className="card svc-form" onSubmit={submit} aria-label="New service" noValidate>
      <h3>New service</h3>
      {offers.length === 0 ? <p>This server's runtime ({kinds.data.runtime}) offers no database: {here?.unavailable.map((u) => u.reason).join(' ')}</p> : null}
      <div className="svc-form-fields">
        <Field label="Kind" name="kind" error={err}>
          {(p) => (
            <Select
              {...p}
              value={chosen?.kind ?? ''}
              onChange={(e) => {
                setKind(e.target.value as ServiceKind);
                setVersion('');
              }}
            >
              {offers.map((o) => (
                <option key={o.kind} value={o.kind}>
                  {o.engine}
                </option>
              ))}
            </Select>
          )}
        </Field>
        <Field label="Version" name="version" error={err}>
          {(p) => (
            <Select {...p} value={version || chosen?.defaultVersion || ''} onChange={(e) => setVersion(e.target.value)}>
              {chosen?.versions.map((v) => (
                <option key={v} value={v}>
                  {v}
                </option>
              ))}
            </Select>
          )}
        </Field>
        <Field label="Name" name="name" error={err} hint={<>Lowercase letters, digits, <code>-</code> and <code>_</code>. The app gets <code>{`${(name.trim() || NAMES[chosen?.kind ?? ''] || 'db').toUpperCase().replace(/-/g, '_')}_URL`}</code>.</>}>
          {(p) => <Input {...p} value={name} onChange={(e) => setName(e.target.value)} placeholder={NAMES[chosen?.kind ?? ''] ?? 'db'} autoComplete="off" spellCheck={false} />}
        </Field>
      </div>
      <fieldset className="svc-resources">
        <legend>Resources (empty: the defaults)</legend>
        <div className="svc-form-fields">
          <Field label="CPU cores" name="resources.cpuCores" error={err} hint="0.1 to 4; default 0.5.">
            {(p) => <Input {...p} type="number" inputMode="decimal" step="0.1" min={0.1} max={4} value={cpu} onChange={(e) => setCpu(e.target.value)} placeholder="0.5" />}
          </Field>
          <Field label="Memory (MB)" name="resources.memoryMb" error={err} hint={`Default ${chosen?.kind === 'redis' ? 128 : 512}.`}>
            {(p) => <Input {...p} type="number" inputMode="numeric" min={64} max={16384} value={memory} onChange={(e) => setMemory(e.target.value)} placeholder={chosen?.kind === 'redis' ? '128' : '512'} />}
          </Field>
          <Field label="Disk (MB)" name="resources.diskMb" error={err} hint="Default 1024; it never shrinks.">
            {(p) => <Input {...p} type="number" inputMode="numeric" min={128} value={disk} onChange={(e) => setDisk(e.target.value)} placeholder="1024" />}
          </Field>
        </div>
      </fieldset>
      {here?.unavailable.length ? <p className="muted svc-form-note">Not offered here: {here.unavailable.map((u) => `${u.kind} (${u.reason})`).join('; ')}</p> : null}
      <ErrorNotice error={err} title="Could not create the service" fields={FIELDS} />
      <div className="form-actions">
        <Button type="submit" variant="primary" busy={create.isPending} disabled={!chosen}>
          Create service
        </Button>
        <Button onClick={onClose}>Cancel</Button>
      </div>
    </form>
  );
}
