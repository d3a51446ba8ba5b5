import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ApiError, call } from '../../api/client';
import { Button, EmptyState, ErrorNotice, Field, Input, Notice, TextArea } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { EnvPaste } from './env-paste';
import { applied, blankRow, envKey, mergePairs, patchOf, rowChange, rowsOf, type EnvPatch, type EnvSet, type Row } from './env-model';

interface Props {
  projectId: string;
  environment: string;
  /** The set as first read; later reads do not overwrite the draft (a notice offers to reload). */
  initial: EnvSet;
  /** The set in the cache now (to notice a change made elsewhere). */
  current: EnvSet | undefined;
  onReload(): Promise<EnvSet | undefined>;
}

/** The editable table of one environment's variables, saved with the merge PATCH (If-Match the set it was read from). */
export function EnvEditor({ projectId, environment, initial, current, onReload }: Props) {
  const qc = useQueryClient();
  const toast = useToast();
  const key = envKey(projectId, environment);
  const [rows, setRows] = useState<Row[]>(() => rowsOf(initial.vars));
  const [baseEtag, setBaseEtag] = useState(initial.etag);
  const [focusUid, setFocusUid] = useState<string | null>(null);

  const save = useMutation({
    mutationFn: async (patch: EnvPatch) => {
      const answer = api.PATCH('/api/projects/{id}/env', {
        params: { path: { id: projectId } },
        body: { environment, upserts: patch.upserts, deletes: patch.deletes },
        headers: baseEtag ? { 'If-Match': baseEtag } : {},
      });
      const body = await call(answer);
      return { vars: body.data, etag: (await answer).response.headers.get('etag') } satisfies EnvSet;
    },
    // Optimistic: the table shows the saved state at once; a refusal puts the draft back, error at its row.
    onMutate: async (patch) => {
      await qc.cancelQueries({ queryKey: key });
      const prev = qc.getQueryData<EnvSet>(key);
      const draft = rows;
      const next = applied(prev?.vars ?? rows.flatMap((r) => (r.orig ? [r.orig] : [])), patch, environment);
      if (prev) qc.setQueryData<EnvSet>(key, { vars: next, etag: prev.etag });
      setRows(rowsOf(next));
      return { prev, draft };
    },
    onError: (_err, _patch, ctx) => {
      if (ctx?.prev) qc.setQueryData(key, ctx.prev);
      if (ctx) setRows(ctx.draft);
    },
    onSuccess: (saved, patch) => {
      qc.setQueryData(key, saved);
      setRows(rowsOf(saved.vars));
      setBaseEtag(saved.etag);
      const n = patch.upserts.length + patch.deletes.length;
      toast(`Saved ${n} change${n === 1 ? '' : 's'} to ${environment}`);
    },
  });

  const update = (uid: string, change: Partial<Row>) => setRows((rs) => rs.map((r) => (r.uid === uid ? { ...r, ...change } : r)));
  const remove = (r: Row) => (r.orig ? update(r.uid, { removed: true }) : setRows((rs) => rs.filter((x) => x.uid !== r.uid)));
  const add = () => {
    const row = blankRow();
    setRows((rs) => [...rs, row]);
    setFocusUid(row.uid);
  };
  const discard = () => {
    setRows(rowsOf(current?.vars ?? initial.vars));
    setBaseEtag(current?.etag ?? initial.etag);
    save.reset();
  };
  const reload = async () => {
    const fresh = await onReload();
    if (!fresh) return;
    setRows(rowsOf(fresh.vars));
    setBaseEtag(fresh.etag);
    save.reset();
  };

  const patch = patchOf(rows);
  const changes = patch.upserts.length + patch.deletes.length;
  const stale = !save.isPending && current?.etag && baseEtag && current.etag !== baseEtag;
  const conflict = save.error instanceof ApiError && save.error.status === 409;
  // Which field of the last refused PATCH a row's error is at: `upserts.3.key` -> the row of upsert 3.
  const sent = save.variables;
  const namesFor = (uid: string) => {
    const u = sent?.upsertRows.indexOf(uid) ?? -1;
    const d = sent?.deleteRows.indexOf(uid) ?? -1;
    return { key: u >= 0 ? `upserts.${u}.key` : d >= 0 ? `deletes.${d}` : undefined, value: u >= 0 ? `upserts.${u}.value` : undefined };
  };
  const atARow = save.error instanceof ApiError && !!save.error.field && /^(body\.)?(upserts\.\d+|deletes\.\d+)/.test(save.error.field);

  return (
    <form
      className="stack"
      onSubmit={(e) => {
        e.preventDefault();
        if (changes > 0 && !save.isPending) save.mutate(patch);
      }}
    >
      {stale || conflict ? (
        <Notice kind="warn">
          The variables of {environment} changed since this page read them. <Button small onClick={() => void reload()}>Reload them</Button>{' '}
          <span className="muted">(your unsaved edits here are dropped)</span>
        </Notice>
      ) : null}
      {save.error && !conflict ? atARow ? <div className="notice notice-error">Nothing was saved: see the variable marked below.</div> : <ErrorNotice error={save.error} title="Nothing was saved" /> : null}
      {rows.length === 0 ? (
        <EmptyState title={`No variables in ${environment} yet`}>
          <p>Add one, or paste the lines of a .env file.</p>
        </EmptyState>
      ) : (
        <div className="table-wrap">
          <table className="env-table stack-table">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Value</th>
                <th scope="col">Secret</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <EnvRow key={r.uid} row={r} names={namesFor(r.uid)} error={save.error} autoFocus={focusUid === r.uid} onChange={(c) => update(r.uid, c)} onRemove={() => remove(r)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div className="row">
        <Button onClick={add}>Add variable</Button>
        <EnvPaste onPaste={(pairs, asSecret) => setRows((rs) => mergePairs(rs, pairs, asSecret))} />
        <span className="env-actions-end row">
          {changes > 0 ? <span className="muted">{changes} unsaved change{changes === 1 ? '' : 's'}</span> : null}
          <Button onClick={discard} disabled={changes === 0 || save.isPending}>
            Discard
          </Button>
          <Button type="submit" variant="primary" busy={save.isPending} disabled={changes === 0}>
            Save changes
          </Button>
        </span>
      </div>
    </form>
  );
}

interface RowProps {
  row: Row;
  names: { key?: string; value?: string };
  error: unknown;
  autoFocus: boolean;
  onChange(c: Partial<Row>): void;
  onRemove(): void;
}

const label = (text: string) => <span className="cell-label">{text}</span>;

function EnvRow({ row: r, names, error, autoFocus, onChange, onRemove }: RowProps) {
  const name = r.orig?.key ?? (r.key || 'new variable');
  const change = rowChange(r);
  if (r.removed) {
    return (
      <tr className="env-removed">
        <td>
          <code>{r.orig?.key}</code>
        </td>
        <td colSpan={2}>
          <Field label={label('Value')} name={names.key} error={error}>
            {(p) => (
              <span id={p.id} className="muted">
                Removed when you save
              </span>
            )}
          </Field>
        </td>
        <td className="actions">
          <Button small onClick={() => onChange({ removed: false })} aria-label={`Undo removing ${name}`}>
            Undo
          </Button>
        </td>
      </tr>
    );
  }
  const secretHidden = r.orig?.isSecret && !r.replacing;
  const multiline = !r.isSecret && r.value.includes('\n');
  return (
    <tr className={change ? 'env-changed' : undefined}>
      <td>
        {r.orig ? (
          <Field label={label('Key')} name={names.key} error={error}>
            {(p) => (
              <code id={p.id} className="env-key">
                {r.orig!.key}
              </code>
            )}
          </Field>
        ) : (
          <Field label={label('Key')} name={names.key} error={error}>
            {(p) => <Input {...p} value={r.key} onChange={(e) => onChange({ key: e.target.value })} placeholder="KEY" autoComplete="off" spellCheck={false} autoFocus={autoFocus} aria-label={`Key of ${name}`} />}
          </Field>
        )}
      </td>
      <td>
        <Field label={label('Value')} name={names.value} error={error}>
          {(p) =>
            secretHidden ? (
              <span className="env-masked row">
                <span id={p.id} className="masked">
                  <span aria-hidden="true">••••••••</span>
                  <span className="sr-only">hidden secret value</span>
                </span>
                <Button small onClick={() => onChange({ replacing: true, value: '' })} aria-label={`Replace the value of ${name}`}>
                  Replace
                </Button>
              </span>
            ) : multiline ? (
              <TextArea {...p} value={r.value} rows={3} onChange={(e) => onChange({ value: e.target.value })} aria-label={`Value of ${name}`} spellCheck={false} />
            ) : (
              <span className="env-value row">
                <Input
                  {...p}
                  type={r.isSecret ? 'password' : 'text'}
                  value={r.value}
                  onChange={(e) => onChange({ value: e.target.value })}
                  placeholder={r.replacing ? 'New value' : ''}
                  autoComplete={r.isSecret ? 'new-password' : 'off'}
                  spellCheck={false}
                  aria-label={r.replacing ? `New value of ${name}` : `Value of ${name}`}
                  autoFocus={r.replacing}
                />
                {r.replacing ? (
                  <Button small onClick={() => onChange({ replacing: false, value: '', isSecret: true })} aria-label={`Keep the current value of ${name}`}>
                    Keep
                  </Button>
                ) : null}
              </span>
            )
          }
        </Field>
      </td>
      <td>
        <label className="check env-secret">
          <input
            type="checkbox"
            checked={r.isSecret}
            // A secret turns plain only with a new value (its old one is never read back).
            disabled={!!secretHidden}
            onChange={(e) => onChange({ isSecret: e.target.checked })}
            aria-label={`${name} is secret`}
          />
          <span aria-hidden="true">Secret</span>
        </label>
      </td>
      <td className="actions">
        <Button small variant="ghost" onClick={onRemove} aria-label={`Remove ${name}`}>
          Remove
        </Button>
      </td>
    </tr>
  );
}
