import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, data } from '../../api/client';
import { Button, ErrorNotice, Field, Input, Select } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { keys, type Destination, type DestinationBody, type DestinationPatch } from './api';

type Kind = 'local' | 's3';

interface Values {
  name: string;
  kind: Kind;
  path: string;
  endpoint: string;
  region: string;
  bucket: string;
  prefix: string;
  accessKeyId: string;
  /** Write-only: typed here, sent once, never read back (the API answers a mask). */
  secretAccessKey: string;
  forcePathStyle: boolean;
}

function valuesOf(d: Destination | undefined): Values {
  const v: Values = { name: '', kind: 'local', path: '', endpoint: '', region: '', bucket: '', prefix: '', accessKeyId: '', secretAccessKey: '', forcePathStyle: false };
  if (!d) return v;
  if (d.kind === 'local') return { ...v, name: d.name, kind: 'local', path: d.path ?? '' };
  return {
    ...v,
    name: d.name,
    kind: 's3',
    endpoint: d.endpoint ?? '',
    region: d.region ?? '',
    bucket: d.bucket ?? '',
    prefix: d.prefix,
    accessKeyId: d.accessKeyId ?? '',
    forcePathStyle: d.forcePathStyle,
  };
}

function createBody(v: Values): DestinationBody {
  if (v.kind === 'local') return { name: v.name, kind: 'local', path: v.path };
  return {
    name: v.name,
    kind: 's3',
    bucket: v.bucket,
    accessKeyId: v.accessKeyId,
    secretAccessKey: v.secretAccessKey,
    forcePathStyle: v.forcePathStyle,
    ...(v.endpoint ? { endpoint: v.endpoint } : {}),
    ...(v.region ? { region: v.region } : {}),
    ...(v.prefix ? { prefix: v.prefix } : {}),
  };
}

/** Only what changed; an emptied endpoint is cleared, an empty secret keeps the stored one. */
function patchBody(v: Values, before: Values): DestinationPatch {
  const p: DestinationPatch = {};
  if (v.name !== before.name) p.name = v.name;
  if (v.kind === 'local') {
    if (v.path !== before.path) p.path = v.path;
    return p;
  }
  if (v.endpoint !== before.endpoint) p.endpoint = v.endpoint || null;
  if (v.region !== before.region) p.region = v.region;
  if (v.bucket !== before.bucket) p.bucket = v.bucket;
  if (v.prefix !== before.prefix) p.prefix = v.prefix;
  if (v.accessKeyId !== before.accessKeyId) p.accessKeyId = v.accessKeyId;
  if (v.secretAccessKey) p.secretAccessKey = v.secretAccessKey;
  if (v.forcePathStyle !== before.forcePathStyle) p.forcePathStyle = v.forcePathStyle;
  return p;
}

/** Create a destination, or edit one (`initial`): the fields of the chosen kind only. */
export function DestinationForm({ initial, onDone }: { initial?: Destination; onDone(): void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const before = valuesOf(initial);
  const [v, setV] = useState<Values>(before);
  const set = <K extends keyof Values>(k: K, value: Values[K]) => setV((o) => ({ ...o, [k]: value }));
  const save = useMutation({
    mutationFn: () =>
      initial
        ? data(api.PATCH('/api/backup-destinations/{id}', { params: { path: { id: initial.id } }, body: patchBody(v, before) }))
        : data(api.POST('/api/backup-destinations', { body: createBody(v) })),
    onSuccess: async (d) => {
      setV((o) => ({ ...o, secretAccessKey: '' }));
      await qc.invalidateQueries({ queryKey: keys.destinations });
      toast(initial ? `Saved "${d.name}"` : `Created "${d.name}"`);
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const err = save.error;
  const title = initial ? `Edit "${initial.name}"` : 'New destination';
  return (
    <form className="card backups-form" onSubmit={submit} aria-label={title} noValidate>
      <h2>{title}</h2>
      <Field label="Name" name="name" error={err}>
        {(p) => <Input {...p} value={v.name} onChange={(e) => set('name', e.target.value)} autoFocus autoComplete="off" required />}
      </Field>
      <Field label="Kind" name="kind" error={err} hint={initial ? 'The kind of a destination cannot change.' : undefined}>
        {(p) => (
          <Select {...p} value={v.kind} onChange={(e) => set('kind', e.target.value as Kind)} disabled={!!initial}>
            <option value="local">Local folder on the server</option>
            <option value="s3">S3-compatible bucket</option>
          </Select>
        )}
      </Field>
      {v.kind === 'local' ? (
        <Field label="Folder" name="path" error={err} hint="An absolute path on the server, outside Berth's data folder; created on first use.">
          {(p) => <Input {...p} value={v.path} onChange={(e) => set('path', e.target.value)} placeholder="/var/backups/berth" autoComplete="off" spellCheck={false} />}
        </Field>
      ) : (
        <S3Fields v={v} set={set} err={err} editing={!!initial} />
      )}
      <ErrorNotice error={err} fields={v.kind === 'local' ? ['name', 'kind', 'path'] : ['name', 'kind', 'bucket', 'endpoint', 'region', 'prefix', 'accessKeyId', 'secretAccessKey']} />
      <div className="row">
        <Button type="submit" variant="primary" busy={save.isPending}>
          {initial ? 'Save destination' : 'Create destination'}
        </Button>
        <Button onClick={onDone}>Cancel</Button>
      </div>
    </form>
  );
}

function S3Fields({ v, set, err, editing }: { v: Values; set: <K extends keyof Values>(k: K, value: Values[K]) => void; err: unknown; editing: boolean }) {
  return (
    <>
      <Field label="Bucket" name="bucket" error={err}>
        {(p) => <Input {...p} value={v.bucket} onChange={(e) => set('bucket', e.target.value)} autoComplete="off" spellCheck={false} />}
      </Field>
      <Field label="Endpoint (optional)" name="endpoint" error={err} hint="Any S3-compatible URL; empty for AWS S3.">
        {(p) => <Input {...p} type="url" value={v.endpoint} onChange={(e) => set('endpoint', e.target.value)} placeholder="https://s3.example.com" autoComplete="off" spellCheck={false} />}
      </Field>
      <Field label="Region" name="region" error={err} hint="Defaults to us-east-1.">
        {(p) => <Input {...p} value={v.region} onChange={(e) => set('region', e.target.value)} placeholder="us-east-1" autoComplete="off" spellCheck={false} />}
      </Field>
      <Field label="Prefix (optional)" name="prefix" error={err} hint="A folder inside the bucket.">
        {(p) => <Input {...p} value={v.prefix} onChange={(e) => set('prefix', e.target.value)} autoComplete="off" spellCheck={false} />}
      </Field>
      <Field label="Access key ID" name="accessKeyId" error={err}>
        {(p) => <Input {...p} value={v.accessKeyId} onChange={(e) => set('accessKeyId', e.target.value)} autoComplete="off" spellCheck={false} />}
      </Field>
      <Field label="Secret access key" name="secretAccessKey" error={err} hint={editing ? 'Stored and never shown. Leave empty to keep it; type a new one to replace it.' : 'Stored sealed; it is never shown again.'}>
        {(p) => (
          <Input {...p} type="password" value={v.secretAccessKey} onChange={(e) => set('secretAccessKey', e.target.value)} placeholder={editing ? '(unchanged)' : ''} autoComplete="new-password" spellCheck={false} />
        )}
      </Field>
      <div className="field">
        <label className="check">
          <input type="checkbox" checked={v.forcePathStyle} onChange={(e) => set('forcePathStyle', e.target.checked)} /> Path-style addressing (MinIO and most self-hosted servers)
        </label>
      </div>
    </>
  );
}
