import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useMemo, useState, type FormEvent } from 'react';
import { Link } from 'wouter';
import { api, data } from '../../api/client';
import { Button, ErrorNotice, Field, Input, Select } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { destinationWhere, keys, serviceLabel, type Destination, type Policy, type PolicyBody, type PolicyPatch, type Service } from './api';

interface Values {
  destinationId: string;
  serviceId: string;
  cronExpression: string;
  timezone: string;
  retainCount: string;
  retainDays: string;
  enabled: boolean;
  webhook: boolean;
  rotateWebhookToken: boolean;
  verifyRestore: boolean;
}

const FIELDS = ['destinationId', 'serviceId', 'cronExpression', 'timezone', 'retainCount', 'retainDays'];

const SCHEDULES: Array<{ cron: string; label: string }> = [
  { cron: '0 3 * * *', label: 'every day at 03:00' },
  { cron: '0 * * * *', label: 'every hour' },
  { cron: '0 3 * * 0', label: 'every Sunday at 03:00' },
  { cron: '*/15 * * * *', label: 'every 15 minutes' },
];

function valuesOf(p: Policy | undefined, destinations: Destination[], services: Service[], serviceId?: string): Values {
  if (p) {
    return {
      destinationId: p.destinationId,
      serviceId: p.serviceId,
      cronExpression: p.cronExpression ?? '',
      timezone: p.timezone,
      retainCount: p.retainCount == null ? '' : String(p.retainCount),
      retainDays: p.retainDays == null ? '' : String(p.retainDays),
      enabled: p.enabled,
      webhook: p.webhookEnabled,
      rotateWebhookToken: false,
      verifyRestore: p.verifyRestore,
    };
  }
  const data = services.find((s) => s.id === serviceId) ?? services.find((s) => s.kind === 'volume' && s.name === 'data') ?? services[0];
  return {
    destinationId: destinations[0]?.id ?? '',
    serviceId: data?.id ?? '',
    cronExpression: '0 3 * * *',
    timezone: 'UTC',
    retainCount: '7',
    retainDays: '',
    enabled: true,
    webhook: false,
    rotateWebhookToken: false,
    verifyRestore: !!data?.managed,
  };
}

/** '' clears the limit (keep everything); anything else goes as a number for the API to judge. */
const count = (s: string): number | null => (s.trim() === '' ? null : Number(s));

function createBody(v: Values): PolicyBody {
  return {
    destinationId: v.destinationId,
    ...(v.serviceId ? { serviceId: v.serviceId } : {}),
    cronExpression: v.cronExpression.trim() || null,
    timezone: v.timezone.trim() || 'UTC',
    retainCount: count(v.retainCount),
    retainDays: count(v.retainDays),
    enabled: v.enabled,
    enableWebhook: v.webhook,
    ...(v.verifyRestore ? { verifyRestore: true } : {}),
  };
}

function patchBody(v: Values, before: Values): PolicyPatch {
  const p: PolicyPatch = {};
  if (v.destinationId !== before.destinationId) p.destinationId = v.destinationId;
  if (v.cronExpression !== before.cronExpression) p.cronExpression = v.cronExpression.trim() || null;
  if (v.timezone !== before.timezone) p.timezone = v.timezone.trim() || 'UTC';
  if (v.retainCount !== before.retainCount) p.retainCount = count(v.retainCount);
  if (v.retainDays !== before.retainDays) p.retainDays = count(v.retainDays);
  if (v.enabled !== before.enabled) p.enabled = v.enabled;
  if (v.verifyRestore !== before.verifyRestore) p.verifyRestore = v.verifyRestore;
  if (v.webhook !== before.webhook) p.enableWebhook = v.webhook;
  else if (v.webhook && v.rotateWebhookToken) p.rotateWebhookToken = true;
  return p;
}

function timeZones(): string[] {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return ['UTC'];
  }
}

/** Create a policy for the project, or edit one: where, what, when, how long to keep. */
export function PolicyForm({
  projectId,
  initial,
  destinations,
  services,
  serviceId,
  onDone,
}: {
  projectId: string;
  initial?: Policy;
  destinations: Destination[];
  services: Service[];
  /** What a new policy backs up at first (else the data volume). */
  serviceId?: string;
  /** Called after a save (with the webhook token when this save issued one) or on cancel. */
  onDone(issuedToken?: string): void;
}) {
  const qc = useQueryClient();
  const toast = useToast();
  const zonesId = useId();
  const before = useMemo(() => valuesOf(initial, destinations, services, serviceId), [initial, destinations, services, serviceId]);
  const [v, setV] = useState<Values>(before);
  const set = <K extends keyof Values>(k: K, value: Values[K]) => setV((o) => ({ ...o, [k]: value }));
  const zones = useMemo(timeZones, []);
  const save = useMutation({
    mutationFn: () =>
      initial
        ? data(api.PATCH('/api/backup-policies/{policyId}', { params: { path: { policyId: initial.id } }, body: patchBody(v, before) }))
        : data(api.POST('/api/projects/{projectId}/backup-policies', { params: { path: { projectId } }, body: createBody(v) })),
    onSuccess: async (p) => {
      await qc.invalidateQueries({ queryKey: keys.policies(projectId) });
      toast(initial ? 'Policy saved' : 'Policy created');
      onDone(p.webhookToken);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const err = save.error;
  const title = initial ? 'Edit backup policy' : 'New backup policy';
  if (destinations.length === 0) {
    return (
      <div className="card">
        <h3>{title}</h3>
        <p>
          A policy writes its backups to a destination, and this organization has none yet. <Link href="/backups/destinations">Create a backup destination</Link> first.
        </p>
        <Button onClick={() => onDone()}>Close</Button>
      </div>
    );
  }
  return (
    <form className="card backups-form" onSubmit={submit} aria-label={title} noValidate>
      <h3>{title}</h3>
      <Field label="What to back up" name="serviceId" error={err} hint={initial ? 'A policy backs up one service; create another policy for another one.' : 'The data volume, an attached database, or one of the project\'s services (by its own dump).'}>
        {(p) => (
          <Select {...p} value={v.serviceId} onChange={(e) => setV((o) => ({ ...o, serviceId: e.target.value, verifyRestore: !!services.find((s) => s.id === e.target.value)?.managed }))} disabled={!!initial}>
            {services.map((s) => (
              <option key={s.id} value={s.id}>
                {serviceLabel(s, s.id)}
              </option>
            ))}
          </Select>
        )}
      </Field>
      <Field label="Destination" name="destinationId" error={err}>
        {(p) => (
          <Select {...p} value={v.destinationId} onChange={(e) => set('destinationId', e.target.value)}>
            {destinations.map((d) => (
              <option key={d.id} value={d.id}>
                {d.name} — {destinationWhere(d)}
              </option>
            ))}
          </Select>
        )}
      </Field>
      <Field
        label="Schedule (cron)"
        name="cronExpression"
        error={err}
        hint={
          <>
            Five fields: minute hour day month weekday. Empty: only when run by hand (or by webhook). For example{' '}
            {SCHEDULES.map((s, i) => (
              <span key={s.cron}>
                {i ? ', ' : ''}
                <code>{s.cron}</code> {s.label}
              </span>
            ))}
            .
          </>
        }
      >
        {(p) => <Input {...p} value={v.cronExpression} onChange={(e) => set('cronExpression', e.target.value)} placeholder="0 3 * * *" autoComplete="off" spellCheck={false} />}
      </Field>
      <Field label="Time zone" name="timezone" error={err} hint="The zone the schedule is read in (IANA name).">
        {(p) => (
          <>
            <Input {...p} value={v.timezone} onChange={(e) => set('timezone', e.target.value)} list={zonesId} autoComplete="off" spellCheck={false} />
            <datalist id={zonesId}>
              {zones.map((z) => (
                <option key={z} value={z} />
              ))}
            </datalist>
          </>
        )}
      </Field>
      <div className="backups-pair">
        <Field label="Keep the last (runs)" name="retainCount" error={err} hint="Empty: no limit. Protected runs are kept on top.">
          {(p) => <Input {...p} type="number" inputMode="numeric" min={1} max={10000} value={v.retainCount} onChange={(e) => set('retainCount', e.target.value)} />}
        </Field>
        <Field label="Keep for (days)" name="retainDays" error={err} hint="Empty: no age limit.">
          {(p) => <Input {...p} type="number" inputMode="numeric" min={1} max={36500} value={v.retainDays} onChange={(e) => set('retainDays', e.target.value)} />}
        </Field>
      </div>
      <div className="field">
        <label className="check">
          <input type="checkbox" checked={v.enabled} onChange={(e) => set('enabled', e.target.checked)} /> Enabled (a disabled policy neither runs on schedule nor by hand)
        </label>
        <label className="check">
          <input type="checkbox" checked={v.webhook} onChange={(e) => set('webhook', e.target.checked)} /> Webhook trigger (a token is shown once after saving)
        </label>
        {services.find((s) => s.id === v.serviceId)?.managed ? (
          <label className="check">
            <input type="checkbox" checked={v.verifyRestore} onChange={(e) => set('verifyRestore', e.target.checked)} /> Test each backup by restoring it into a throwaway instance
          </label>
        ) : null}
        {initial?.webhookEnabled && v.webhook ? (
          <label className="check">
            <input type="checkbox" checked={v.rotateWebhookToken} onChange={(e) => set('rotateWebhookToken', e.target.checked)} /> Issue a new webhook token (the old one stops working)
          </label>
        ) : null}
      </div>
      <ErrorNotice error={err} fields={FIELDS} />
      <div className="row">
        <Button type="submit" variant="primary" busy={save.isPending}>
          {initial ? 'Save policy' : 'Create policy'}
        </Button>
        <Button onClick={() => onDone()}>Cancel</Button>
      </div>
    </form>
  );
}
