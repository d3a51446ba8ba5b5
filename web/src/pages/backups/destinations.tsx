import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { api, data, messageOf } from '../../api/client';
import { Button, ConfirmDialog, EmptyState, ErrorNotice, Spinner, TimeAgo } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { useToast } from '../../ui/toast';
import { destinationsQuery, destinationWhere, keys, type Destination, type DestinationTest } from './api';
import { DestinationForm } from './destination-form';
import './backups.css';

/** The org's backup destinations: local folders and S3-compatible buckets. */
export default function DestinationsPage(_: PageProps) {
  const list = useQuery(destinationsQuery());
  const [editing, setEditing] = useState<Destination | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Destination | null>(null);
  const access = useAccess();
  return (
    <>
      <PageHeader title="Backup destinations" sub="Where backups are written: a folder on this server or an S3-compatible bucket. Secret keys are stored sealed and never shown again.">
        {editing === null && access.destination(null, 'write') ? (
          <Button variant="primary" onClick={() => setEditing('new')}>
            New destination
          </Button>
        ) : null}
      </PageHeader>
      {editing !== null ? <DestinationForm key={editing === 'new' ? 'new' : editing.id} initial={editing === 'new' ? undefined : editing} onDone={() => setEditing(null)} /> : null}
      {list.isPending ? <Spinner /> : null}
      <ErrorNotice error={list.error} title="Could not load the destinations" />
      {list.data && list.data.length === 0 ? (
        <EmptyState title="No backup destinations yet">
          <p>Create one, then attach a backup policy to a project from its Backups tab.</p>
        </EmptyState>
      ) : null}
      {list.data && list.data.length > 0 ? <DestinationTable rows={list.data} onEdit={setEditing} onDelete={setDeleting} /> : null}
      <DeleteDestination target={deleting} onClose={() => setDeleting(null)} />
    </>
  );
}

function DestinationTable({ rows, onEdit, onDelete }: { rows: Destination[]; onEdit(d: Destination): void; onDelete(d: Destination): void }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">Backup destinations</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Kind</th>
            <th scope="col">Where</th>
            <th scope="col">Updated</th>
            <th scope="col">Test</th>
            <th scope="col">
              <span className="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((d) => (
            <DestinationRow key={d.id} d={d} onEdit={() => onEdit(d)} onDelete={() => onDelete(d)} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function DestinationRow({ d, onEdit, onDelete }: { d: Destination; onEdit(): void; onDelete(): void }) {
  // Testing and editing need write on the destination, deleting admin: a member only reads them.
  const access = useAccess();
  const canWrite = access.destination(d.id, 'write');
  const test = useMutation({
    mutationFn: () => data(api.POST('/api/backup-destinations/{id}/test', { params: { path: { id: d.id } } })),
  });
  return (
    <tr>
      <th scope="row">{d.name}</th>
      <td>{d.kind === 'local' ? 'Local folder' : 'S3'}</td>
      <td className="mono backups-where">{destinationWhere(d)}</td>
      <td>
        <TimeAgo at={d.updatedAt} />
      </td>
      <td className="backups-test" aria-live="polite">
        {canWrite ? (
          <Button small onClick={() => test.mutate()} busy={test.isPending} aria-label={`Test ${d.name}`}>
            Test
          </Button>
        ) : null}{' '}
        <TestResult result={test.data} error={test.error} />
      </td>
      <td className="actions">
        {canWrite ? (
          <Button small variant="ghost" onClick={onEdit} aria-label={`Edit ${d.name}`}>
            Edit
          </Button>
        ) : null}
        {access.destination(d.id, 'admin') ? (
          <Button small variant="danger" onClick={onDelete} aria-label={`Delete ${d.name}`}>
            Delete
          </Button>
        ) : null}
      </td>
    </tr>
  );
}

function TestResult({ result, error }: { result: DestinationTest | undefined; error: unknown }) {
  if (error) return <span className="backups-bad">Test failed: {messageOf(error)}</span>;
  if (!result) return null;
  return result.ok ? (
    <span className="backups-ok">Works ({result.latencyMs} ms)</span>
  ) : (
    <span className="backups-bad">
      Failed: {result.error ?? 'the probe could not be written and read back'} ({result.latencyMs} ms)
    </span>
  );
}

function DeleteDestination({ target, onClose }: { target: Destination | null; onClose(): void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const del = useMutation({
    mutationFn: (d: Destination) => data(api.DELETE('/api/backup-destinations/{id}', { params: { path: { id: d.id } } })),
    onSuccess: async (_r, d) => {
      await qc.invalidateQueries({ queryKey: keys.destinations });
      toast(`Deleted "${d.name}"`);
      close();
    },
  });
  const close = () => {
    del.reset();
    onClose();
  };
  return (
    <ConfirmDialog
      open={!!target}
      title="Delete this destination?"
      confirmLabel="Delete destination"
      busy={del.isPending}
      error={del.error}
      onConfirm={() => target && del.mutate(target)}
      onCancel={close}
    >
      {target ? (
        <p>
          <strong>{target.name}</strong> ({destinationWhere(target)}) is removed from Berth. The files already in it stay where they are. A destination that a policy or a
          restorable backup still uses cannot be deleted.
        </p>
      ) : null}
    </ConfirmDialog>
  );
}
