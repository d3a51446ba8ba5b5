import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, data } from '../../api/client';
import type { paths } from '../../../../src/api-types/schema';
import { Button, CopyButton, ErrorNotice, Field, Input, Select } from '../../ui/controls';

type CreateBody = paths['/api/notification-channels']['post']['requestBody']['content']['application/json'];
export type ChannelKind = CreateBody['kind'];
export type EventName = CreateBody['events'][number];
type Created = Awaited<ReturnType<typeof createChannel>>;

export const channelKeys = { all: ['org', 'notification-channels'] as const, deliveries: (id: string) => ['org', 'notification-channels', id, 'deliveries'] as const };

/** Contract 20's events, in words. */
export const EVENTS: Array<{ name: EventName; label: string }> = [
  { name: 'deployment.failed', label: 'A deployment failed' },
  { name: 'deployment.ready', label: 'A deployment is ready' },
  { name: 'app.degraded', label: 'An app is degraded' },
  { name: 'app.recovered', label: 'An app recovered' },
  { name: 'backup.failed', label: 'A backup failed' },
  { name: 'backup.verify_failed', label: 'A backup did not verify' },
  { name: 'certificate.failed', label: 'A certificate could not be issued' },
  { name: 'certificate.expiring', label: 'A certificate expires soon' },
  { name: 'disk.near_limit', label: 'A disk is nearly full' },
];

export const KINDS: Array<{ kind: ChannelKind; label: string; target: string; hint: string }> = [
  { kind: 'webhook', label: 'Webhook', target: 'URL', hint: 'Berth POSTs JSON signed with X-Berth-Signature (HMAC-SHA256 under the secret shown once).' },
  { kind: 'slack', label: 'Slack', target: 'Incoming webhook URL', hint: 'https://hooks.slack.com/services/…' },
  { kind: 'discord', label: 'Discord', target: 'Webhook URL', hint: 'https://discord.com/api/webhooks/…' },
  { kind: 'email', label: 'Email', target: 'To', hint: 'One address; the server sends through BERTH_SMTP_URL.' },
];

function createChannel(body: CreateBody) {
  return data(api.POST('/api/notification-channels', { body }));
}

/** The new webhook channel's signing secret, this once. */
function SecretOnce({ channel, onDone }: { channel: Created; onDone(): void }) {
  return (
    <section className="notice notice-warn stack" aria-labelledby="channel-secret-title">
      <h2 id="channel-secret-title" className="flush">
        The signing secret of “{channel.name}”
      </h2>
      <p className="flush">
        <strong>Copy it now: it will not be shown again.</strong> Your receiver checks each body's <code>X-Berth-Signature</code> with it.
      </p>
      <div className="secret">
        <code data-testid="channel-secret">{channel.secret}</code>
        <CopyButton text={channel.secret ?? ''} label="Copy secret" />
      </div>
      <div>
        <Button small onClick={onDone}>
          I have copied it
        </Button>
      </div>
    </section>
  );
}

/** A new channel: name, kind, where to (URL or address), which events. */
export function ChannelForm() {
  const qc = useQueryClient();
  const [name, setName] = useState('');
  const [kind, setKind] = useState<ChannelKind>('webhook');
  const [target, setTarget] = useState('');
  const [events, setEvents] = useState<Set<EventName>>(new Set(EVENTS.map((e) => e.name).filter((e) => e !== 'deployment.ready')));
  const [secret, setSecret] = useState<Created | null>(null);
  const create = useMutation({
    mutationFn: createChannel,
    onSuccess: (c) => {
      setName('');
      setTarget('');
      if (c.secret) setSecret(c);
      void qc.invalidateQueries({ queryKey: channelKeys.all });
    },
  });
  const k = KINDS.find((x) => x.kind === kind)!;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body: CreateBody = { name: name.trim(), kind, events: [...events] };
    if (kind === 'email') body.to = target.trim();
    else body.url = target.trim();
    create.mutate(body);
  };
  const toggle = (ev: EventName, on: boolean) =>
    setEvents((s) => {
      const next = new Set(s);
      if (on) next.add(ev);
      else next.delete(ev);
      return next;
    });
  if (secret) return <SecretOnce channel={secret} onDone={() => setSecret(null)} />;
  return (
    <form className="card" onSubmit={submit} aria-labelledby="new-channel-title">
      <h2 id="new-channel-title" className="flush">
        New channel
      </h2>
      <div className="form-cols">
        <Field label="Name" name="name" error={create.error}>
          {(p) => <Input {...p} value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} placeholder="on-call" />}
        </Field>
        <Field label="Kind" name="kind" error={create.error}>
          {(p) => (
            <Select {...p} value={kind} onChange={(e) => setKind(e.target.value as ChannelKind)}>
              {KINDS.map((x) => (
                <option key={x.kind} value={x.kind}>
                  {x.label}
                </option>
              ))}
            </Select>
          )}
        </Field>
      </div>
      <Field label={k.target} name={kind === 'email' ? 'to' : 'url'} error={create.error} hint={k.hint}>
        {(p) => <Input {...p} type={kind === 'email' ? 'email' : 'url'} value={target} onChange={(e) => setTarget(e.target.value)} required autoComplete="off" />}
      </Field>
      <fieldset className="plain">
        <legend>Events</legend>
        <div className="event-grid">
          {EVENTS.map((ev) => (
            <label key={ev.name} className="check">
              <input type="checkbox" checked={events.has(ev.name)} onChange={(e) => toggle(ev.name, e.target.checked)} />
              {ev.label} <code className="muted">{ev.name}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <ErrorNotice error={create.error} title="Could not create the channel" fields={['name', 'kind', 'url', 'to']} />
      <Button type="submit" variant="primary" busy={create.isPending} disabled={!events.size}>
        Create channel
      </Button>
      {!events.size ? <p className="muted">Pick at least one event.</p> : null}
    </form>
  );
}
