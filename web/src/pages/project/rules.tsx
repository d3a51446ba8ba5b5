import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { api, ApiError, data, messageOf } from '../../api/client';
import { Button, EmptyState, ErrorNotice, Notice, Spinner } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { fetchRules, KIND_LABEL, RuleForm, rulesKey, type Rule } from './rules-form';
import { OpenConfirm, useShown } from './settings-common';
import './settings.css';

/** What a rule does, in a sentence. */
function describe(r: Rule): string {
  if (r.kind === 'rate-limit') return `${r.limit} requests per ${r.windowSeconds} s per client address; then 429`;
  if (r.kind === 'ban') return `403 for ${(r.ips ?? []).join(', ')}${r.expiresAt ? ` until ${new Date(r.expiresAt).toLocaleString()}` : ''}`;
  return `${r.action === 'allow' ? 'Only' : 'Deny (403)'} ${(r.cidrs ?? []).join(', ')}${r.action === 'allow' ? ' pass' : ''}`;
}

/** The edge's route rules of the project: rate limits, bans, allow/deny ranges. */
export default function RulesPage({ params }: PageProps) {
  const id = params.id!;
  const qc = useQueryClient();
  const toast = useToast();
  const rules = useQuery({ queryKey: rulesKey(id), queryFn: () => fetchRules(id) });
  const [editing, setEditing] = useState<Rule | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Rule | null>(null);
  // Adding, editing, switching and deleting rules need write on the project: a read-only member sees them.
  const canWrite = useAccess().project(id, 'write');

  const remove = useMutation({
    mutationFn: (r: Rule) => data(api.DELETE('/api/projects/{id}/route-rules/{ruleId}', { params: { path: { id, ruleId: r.id } } })),
    onSuccess: (gone) => {
      qc.setQueryData<Rule[]>(rulesKey(id), (rs) => rs?.filter((x) => x.id !== gone.id));
      toast('Rule deleted');
      setDeleting(null);
    },
  });

  if (rules.error instanceof ApiError && rules.error.status === 404) {
    return (
      <div className="stack settings-page">
        <h2>Route rules</h2>
        <Notice>Route rules are enforced by a self-hosted instance's edge; this instance does not offer them.</Notice>
      </div>
    );
  }
  return (
    <div className="stack settings-page">
      <div className="section-head">
        <h2>Route rules</h2>
        {canWrite && editing === null ? (
          <Button variant="primary" onClick={() => setEditing('new')}>
            Add rule
          </Button>
        ) : null}
      </div>
      <p className="muted">The edge applies them to requests for this project within a second of a change, on the path as it normalises it.</p>
      {editing !== null ? <RuleForm key={editing === 'new' ? 'new' : editing.id} projectId={id} rule={editing === 'new' ? undefined : editing} onDone={() => setEditing(null)} onCancel={() => setEditing(null)} /> : null}
      {rules.isPending ? (
        <Spinner />
      ) : rules.error ? (
        <ErrorNotice error={rules.error} title="Could not load the rules" />
      ) : rules.data.length === 0 ? (
        <EmptyState title="No route rules">
          <p>Every request reaches the app. Add a rate limit, a ban or an allow/deny list.</p>
        </EmptyState>
      ) : (
        <div className="table-wrap">
          <table className="stack-table">
            <thead>
              <tr>
                <th scope="col">Rule</th>
                <th scope="col">Path</th>
                <th scope="col">Enabled</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rules.data.map((r) => (
                <tr key={r.id}>
                  <td>
                    <strong>{KIND_LABEL[r.kind]}</strong>
                    <div className="muted rule-detail">{describe(r)}</div>
                  </td>
                  <td data-label="Path">{r.path ? <code>{r.path}</code> : <span className="muted">every path</span>}</td>
                  <td data-label="Enabled">
                    {canWrite ? <RuleToggle projectId={id} rule={r} /> : <span>{r.enabled ? 'On' : 'Off'}</span>}
                  </td>
                  <td className="actions">
                    {canWrite ? (
                      <>
                        <Button small onClick={() => setEditing(r)} aria-label={`Edit ${KIND_LABEL[r.kind].toLowerCase()} rule on ${r.path ?? 'every path'}`}>
                          Edit
                        </Button>{' '}
                        <Button small variant="danger" onClick={() => (remove.reset(), setDeleting(r))} aria-label={`Delete ${KIND_LABEL[r.kind].toLowerCase()} rule on ${r.path ?? 'every path'}`}>
                          Delete
                        </Button>
                      </>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <OpenConfirm
        open={deleting !== null}
        title="Delete this rule?"
        confirmLabel="Delete rule"
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => deleting && remove.mutate(deleting)}
        onCancel={() => setDeleting(null)}
      >
        {deleting ? (
          <p>
            {KIND_LABEL[deleting.kind]} on {deleting.path ? <code>{deleting.path}</code> : 'every path'}: {describe(deleting)}. The edge stops applying it within a second.
          </p>
        ) : null}
      </OpenConfirm>
    </div>
  );
}

/** A rule's on/off switch, saved as it is flipped (optimistic: shown at once, put back on a refusal). */
function RuleToggle({ projectId, rule }: { projectId: string; rule: Rule }) {
  const qc = useQueryClient();
  const toast = useToast();
  const [enabled, choose, drop] = useShown(rule.enabled);
  const toggle = useMutation({
    mutationFn: (on: boolean) => data(api.PATCH('/api/projects/{id}/route-rules/{ruleId}', { params: { path: { id: projectId, ruleId: rule.id } }, body: { enabled: on } })),
    onMutate: async (on) => {
      await qc.cancelQueries({ queryKey: rulesKey(projectId) });
      const prev = qc.getQueryData<Rule[]>(rulesKey(projectId));
      qc.setQueryData<Rule[]>(rulesKey(projectId), (rs) => rs?.map((x) => (x.id === rule.id ? { ...x, enabled: on } : x)));
      return { prev };
    },
    onError: (err, _on, ctx) => {
      if (ctx?.prev) qc.setQueryData(rulesKey(projectId), ctx.prev);
      drop();
      toast(`The rule was not changed: ${messageOf(err)}`, 'error');
    },
    onSuccess: (saved) => qc.setQueryData<Rule[]>(rulesKey(projectId), (rs) => rs?.map((x) => (x.id === saved.id ? saved : x))),
  });
  return (
    <label className="check">
      <input
        type="checkbox"
        checked={enabled}
        onChange={(e) => (choose(e.target.checked), toggle.mutate(e.target.checked))}
        aria-label={`${KIND_LABEL[rule.kind]} rule on ${rule.path ?? 'every path'} enabled`}
      />
      <span aria-hidden="true">{enabled ? 'On' : 'Off'}</span>
    </label>
  );
}
