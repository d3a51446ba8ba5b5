import { useMutation } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { api, data } from '../../api/client';
import { useEventStream } from '../../api/sse';
import { Button, CopyButton, ErrorNotice, Field, Input } from '../../ui/controls';
import { LogView, type LogLine } from '../../ui/log-view';
import { useToast } from '../../ui/toast';
import { usePutService, type Credentials, type Service } from './api';

/**
 * The service's generated credentials, shown only when a project admin asks (each reveal is audited)
 * and only until they hide them or leave: they are kept in this card's state, never in a cache.
 */
export function CredentialsCard({ projectId, s }: { projectId: string; s: Service }) {
  const [shown, setShown] = useState<Credentials | null>(null);
  const reveal = useMutation({
    mutationFn: () => data(api.GET('/api/projects/{id}/services/{sid}/credentials', { params: { path: { id: projectId, sid: s.id } } })),
    onSuccess: setShown,
  });
  useEffect(() => setShown(null), [s.id]);
  return (
    <section className="card" aria-labelledby="svc-creds">
      <div className="svc-section-head">
        <h3 id="svc-creds">Credentials</h3>
        {shown ? (
          <Button small onClick={() => setShown(null)}>
            Hide
          </Button>
        ) : (
          <Button small onClick={() => reveal.mutate()} busy={reveal.isPending}>
            Reveal credentials
          </Button>
        )}
      </div>
      {shown ? (
        <dl className="facts svc-creds">
          <dt>User</dt>
          <dd>
            <code>{shown.username}</code>
          </dd>
          <dt>Password</dt>
          <dd>
            <code>{shown.password}</code> <CopyButton text={shown.password} />
          </dd>
          {shown.database ? (
            <>
              <dt>Database</dt>
              <dd>
                <code>{shown.database}</code>
              </dd>
            </>
          ) : null}
          <dt>URL</dt>
          <dd>{shown.url ? <><code>{shown.url}</code> <CopyButton text={shown.url} /></> : <span className="muted">none while it is not running</span>}</dd>
        </dl>
      ) : (
        <p className="muted">
          The app gets them as variables. Revealing them here is recorded in the audit log. From a terminal, <code>berth services connect</code> opens a client without showing them.
        </p>
      )}
      <ErrorNotice error={reveal.error} title="Could not reveal the credentials" />
    </section>
  );
}

/** The service's output, live (passwords redacted by the server); a closed stream is opened again on request. */
export function ServiceLog({ projectId, s }: { projectId: string; s: Service }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [key, setKey] = useState(0);
  const state = useEventStream(
    `/api/projects/${encodeURIComponent(projectId)}/services/${encodeURIComponent(s.id)}/logs/stream?limit=200`,
    { log: (l: { line: string }) => setLines((ls) => [...ls.slice(-1999), { ts: '', line: l.line }]) },
    key,
  );
  return (
    <section className="svc-log" aria-labelledby="svc-log">
      <div className="svc-section-head">
        <h3 id="svc-log">Logs</h3>
        {state === 'closed' ? (
          <Button
            small
            onClick={() => {
              setLines([]);
              setKey((k) => k + 1);
            }}
          >
            Reconnect
          </Button>
        ) : null}
      </div>
      <LogView lines={lines} state={state} label={`Log of ${s.name}`} max={2000} />
    </section>
  );
}

const num = (v: string) => (v.trim() === '' ? undefined : Number(v));

/** New limits for the service (it restarts with them); the disk never shrinks. */
export function ResizeForm({ projectId, s }: { projectId: string; s: Service }) {
  const toast = useToast();
  const put = usePutService(projectId);
  const r = s.resources;
  const [cpu, setCpu] = useState(String(r?.cpuCores ?? ''));
  const [memory, setMemory] = useState(String(r?.memoryMb ?? ''));
  const [disk, setDisk] = useState(String(r?.diskMb ?? ''));
  const save = useMutation({
    mutationFn: () => data(api.PATCH('/api/projects/{id}/services/{sid}', { params: { path: { id: projectId, sid: s.id } }, body: { resources: { cpuCores: num(cpu), memoryMb: num(memory), diskMb: num(disk) } } })),
    onSuccess: (next) => {
      put(next);
      toast(`${next.name}: new resources saved; it restarts with them`);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <form className="card svc-form" onSubmit={submit} aria-label="Resources" noValidate>
      <h3>Resources</h3>
      <div className="svc-form-fields">
        <Field label="CPU cores" name="resources.cpuCores" error={save.error}>
          {(p) => <Input {...p} type="number" inputMode="decimal" step="0.1" min={0.1} max={4} value={cpu} onChange={(e) => setCpu(e.target.value)} />}
        </Field>
        <Field label="Memory (MB)" name="resources.memoryMb" error={save.error}>
          {(p) => <Input {...p} type="number" inputMode="numeric" min={64} max={16384} value={memory} onChange={(e) => setMemory(e.target.value)} />}
        </Field>
        <Field label="Disk (MB)" name="resources.diskMb" error={save.error} hint="It never shrinks.">
          {(p) => <Input {...p} type="number" inputMode="numeric" min={128} value={disk} onChange={(e) => setDisk(e.target.value)} />}
        </Field>
      </div>
      <ErrorNotice error={save.error} title="Not saved" fields={['resources']} />
      <div className="form-actions">
        <Button type="submit" busy={save.isPending}>
          Save resources
        </Button>
        <span className="muted svc-form-note">The service restarts with its new limits.</span>
      </div>
    </form>
  );
}
