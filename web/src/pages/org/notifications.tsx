import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { PageProps } from '../../app';
import { api, data, messageOf } from '../../api/client';
import { Button, ConfirmDialog, EmptyState, ErrorNotice, Notice, Spinner, StatusBadge } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { useToast } from '../../ui/toast';
import { useSession } from '../../session';
import { ChannelForm, channelKeys, EVENTS, KINDS } from './notification-form';
import { RelTime } from './org-api';
import './org.css';

const fetchChannels = () => data(api.GET('/api/notification-channels'));
type Channel = Awaited<ReturnType<typeof fetchChannels>>[number];
const fetchDeliveries = (id: string) => data(api.GET('/api/notification-channels/{id}/deliveries', { params: { path: { id }, query: { limit: 50 } } }));
type Delivery = Awaited<ReturnType<typeof fetchDeliveries>>[number];

const eventLabel = (name: string) => (name === 'test' ? 'Test' : (EVENTS.find((e) => e.name === name)?.label ?? name));

/** A channel's deliveries, newest first; refreshed while one is still pending (retries run for 24 h). */
function Deliveries({ channel }: { channel: Channel }) {
  const list = useQuery({
    queryKey: channelKeys.deliveries(channel.id),
    queryFn: () => fetchDeliveries(channel.id),
    refetchInterval: (q) => (q.state.data?.some((d) => d.status === 'pending') ? 5000 : false),
  });
  if (list.isPending) return <Spinner label="Loading deliveries" />;
  if (list.error) return <ErrorNotice error={list.error} title="Could not load the deliveries" />;
  if (!list.data.length) return <EmptyState title="Nothing sent yet">Send a test to check the channel.</EmptyState>;
  return (
    <div className="table-wrap">
      <table className="org-table deliveries">
        <caption className="sr-only">Deliveries of {channel.name}, newest first</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last answer</th>
          </tr>
        </thead>
        <tbody>
          {list.data.map((d: Delivery) => (
            <tr key={d.id}>
              <td data-label="When">
                <RelTime at={d.createdAt} />
              </td>
              <td data-label="Event">
                <span>
                  {eventLabel(d.event)}
                  <span className="sub">{d.subject}</span>
                </span>
              </td>
              <td data-label="Status">
                <StatusBadge status={d.status} />
                {d.status === 'pending' && d.nextAttemptAt ? (
                  <span className="sub">
                    next try <RelTime at={d.nextAttemptAt} />
                  </span>
                ) : null}
              </td>
              <td data-label="Attempts">{d.attempts}</td>
              <td data-label="Last answer">{d.lastError ? <span className="row-error">{d.lastError}</span> : d.lastStatusCode ? `HTTP ${d.lastStatusCode}` : d.status === 'delivered' ? 'accepted' : '–'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function ChannelRow({ channel: c, open, onToggle, onDelete }: { channel: Channel; open: boolean; onToggle(): void; onDelete(): void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const test = useMutation({
    mutationFn: () => data(api.POST('/api/notification-channels/{id}/test', { params: { path: { id: c.id } } })),
    onSuccess: (d) => {
      toast(d.status === 'delivered' ? `Test sent to “${c.name}”` : `The test to “${c.name}” failed: ${d.lastError ?? d.status}`, d.status === 'delivered' ? undefined : 'error');
      void qc.invalidateQueries({ queryKey: channelKeys.deliveries(c.id) });
      if (!open) onToggle();
    },
    onError: (err) => toast(`Could not send the test: ${messageOf(err)}`, 'error'),
  });
  return (
    <>
      <tr>
        <td data-label="Name">
          <span>
            {c.name}
            <span className="sub">{KINDS.find((k) => k.kind === c.kind)?.label ?? c.kind}{c.signed ? ', signed' : ''}</span>
          </span>
        </td>
        <td data-label="Sends to">
          <code>{c.url ?? c.to ?? '–'}</code>
        </td>
        <td data-label="Events">
          <span title={c.events.join(', ')}>{c.events.length === EVENTS.length ? 'All events' : c.events.map(eventLabel).join(', ')}</span>
        </td>
        <td className="actions">
          <Button small busy={test.isPending} onClick={() => test.mutate()} aria-label={`Send a test to ${c.name}`}>
            Send test
          </Button>{' '}
          <Button small variant="ghost" aria-expanded={open} onClick={onToggle} aria-label={`Deliveries of ${c.name}`}>
            Deliveries
          </Button>{' '}
          <Button small variant="danger" onClick={onDelete} aria-label={`Delete the channel ${c.name}`}>
            Delete
          </Button>
        </td>
      </tr>
      {open ? (
        <tr className="deliveries-row">
          <td colSpan={4}>
            <h3 className="flush">Deliveries of “{c.name}”</h3>
            <Deliveries channel={c} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

function ChannelTable() {
  const qc = useQueryClient();
  const toast = useToast();
  const channels = useQuery({ queryKey: channelKeys.all, queryFn: fetchChannels });
  const [open, setOpen] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<Channel | null>(null);
  const remove = useMutation({
    mutationFn: (id: string) => data(api.DELETE('/api/notification-channels/{id}', { params: { path: { id } } })),
    onSuccess: () => {
      toast(`Channel “${deleting?.name}” deleted`);
      setDeleting(null);
      void qc.invalidateQueries({ queryKey: channelKeys.all });
    },
  });
  if (channels.isPending) return <Spinner label="Loading channels" />;
  if (channels.error) return <ErrorNotice error={channels.error} title="Could not load the channels" />;
  if (!channels.data.length) return <EmptyState title="No channels yet">Add one above: Berth then tells it when deployments fail, apps degrade or backups fail.</EmptyState>;
  return (
    <>
      <div className="table-wrap">
        <table className="org-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Sends to</th>
              <th scope="col">Events</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {channels.data.map((c) => (
              <ChannelRow key={c.id} channel={c} open={open === c.id} onToggle={() => setOpen((o) => (o === c.id ? null : c.id))} onDelete={() => setDeleting(c)} />
            ))}
          </tbody>
        </table>
      </div>
      <ConfirmDialog
        open={!!deleting}
        title={`Delete “${deleting?.name}”?`}
        confirmLabel="Delete channel"
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => deleting && remove.mutate(deleting.id)}
        onCancel={() => setDeleting(null)}
      >
        <p>Nothing more is sent to it, and its deliveries log is deleted with it (retries still queued do nothing).</p>
      </ConfirmDialog>
    </>
  );
}

/** The org's notification channels (contract section 20): owners and admins only, as the API decides. */
export default function NotificationsPage(_: PageProps) {
  const me = useSession();
  const admin = me.role === 'owner' || me.role === 'admin';
  return (
    <>
      <PageHeader title="Notifications" sub="Where Berth tells your team about failed deployments, degraded apps, backups and certificates" />
      {!admin ? (
        <Notice kind="info">
          Only owners and admins of <strong>{me.org?.name ?? 'this organization'}</strong> manage its notification channels. Your role here is {me.role}.
        </Notice>
      ) : (
        <>
          <ChannelForm />
          <h2>Channels</h2>
          <ChannelTable />
        </>
      )}
    </>
  );
}
