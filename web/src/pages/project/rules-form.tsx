import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, data } from '../../api/client';
import type { paths } from '../../../../src/api-types/schema';
import { Button, ErrorNotice, errorNames, Field, Input, Select, TextArea } from '../../ui/controls';
import { useToast } from '../../ui/toast';

export const rulesKey = (id: string) => ['project', id, 'route-rules'] as const;
export const fetchRules = (id: string) => data(api.GET('/api/projects/{id}/route-rules', { params: { path: { id } } }));
export type Rule = Awaited<ReturnType<typeof fetchRules>>[number];
export type RuleKind = Rule['kind'];
type RuleBody = paths['/api/projects/{id}/route-rules']['post']['requestBody']['content']['application/json'];

export const KIND_LABEL: Record<RuleKind, string> = { 'rate-limit': 'Rate limit', ban: 'Ban', 'allow-deny': 'Allow / deny' };
const FIELDS = ['kind', 'path', 'limit', 'windowSeconds', 'ips', 'expiresAt', 'action', 'cidrs'];

/** `2025-01-02T03:04:05Z` -> the `datetime-local` input's local `2025-01-02T04:04`. */
function toLocalInput(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

const list = (text: string) => text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
const num = (text: string) => (text.trim() === '' ? undefined : Number(text));

/** The form of one rule: its kind's fields (a new rule picks the kind; an existing one keeps it). */
export function RuleForm({ projectId, rule, onDone, onCancel }: { projectId: string; rule?: Rule; onDone(): void; onCancel(): void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const [kind, setKind] = useState<RuleKind>(rule?.kind ?? 'rate-limit');
  const [path, setPath] = useState(rule?.path ?? '');
  const [limit, setLimit] = useState(rule?.limit != null ? String(rule.limit) : '100');
  const [windowSeconds, setWindowSeconds] = useState(rule?.windowSeconds != null ? String(rule.windowSeconds) : '60');
  const [ips, setIps] = useState((rule?.ips ?? []).join('\n'));
  const [expiresAt, setExpiresAt] = useState(toLocalInput(rule?.expiresAt));
  const [action, setAction] = useState<'allow' | 'deny'>(rule?.action ?? 'deny');
  const [cidrs, setCidrs] = useState((rule?.cidrs ?? []).join('\n'));

  const body = (): RuleBody => {
    const common = { kind, path: path.trim() === '' ? null : path.trim() };
    if (kind === 'rate-limit') return { ...common, limit: num(limit), windowSeconds: num(windowSeconds) };
    if (kind === 'ban') return { ...common, ips: list(ips), expiresAt: expiresAt ? new Date(expiresAt).toISOString() : null };
    return { ...common, action, cidrs: list(cidrs) };
  };
  const save = useMutation({
    mutationFn: () => {
      const b = body();
      if (!rule) return data(api.POST('/api/projects/{id}/route-rules', { params: { path: { id: projectId } }, body: b }));
      const { kind: _kind, ...patch } = b;
      return data(api.PATCH('/api/projects/{id}/route-rules/{ruleId}', { params: { path: { id: projectId, ruleId: rule.id } }, body: patch }));
    },
    onSuccess: (saved) => {
      qc.setQueryData<Rule[]>(rulesKey(projectId), (rs) => (rule ? rs?.map((r) => (r.id === saved.id ? saved : r)) : [...(rs ?? []), saved]));
      toast(rule ? 'Rule saved' : `${KIND_LABEL[saved.kind]} rule added`);
      onDone();
    },
  });
  const err = save.error;
  const elsewhere = err && !FIELDS.some((f) => errorNames(err, f));
  return (
    <form
      className="card"
      aria-labelledby="rule-form-title"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate();
      }}
    >
      <h3 id="rule-form-title">{rule ? `Edit ${KIND_LABEL[rule.kind].toLowerCase()} rule` : 'Add a rule'}</h3>
      <div className="form-grid">
        {rule ? null : (
          <Field label="Kind" name="kind" error={err}>
            {(p) => (
              <Select {...p} value={kind} onChange={(e) => setKind(e.target.value as RuleKind)} autoFocus>
                <option value="rate-limit">Rate limit (429 over the limit)</option>
                <option value="ban">Ban addresses (403)</option>
                <option value="allow-deny">Allow or deny ranges</option>
              </Select>
            )}
          </Field>
        )}
        <Field label="Path" name="path" error={err} hint="A prefix (/api) or glob (/api/*); empty: every path.">
          {(p) => <Input {...p} value={path} onChange={(e) => setPath(e.target.value)} placeholder="/api" spellCheck={false} autoComplete="off" autoFocus={!!rule} />}
        </Field>
      </div>
      {kind === 'rate-limit' ? (
        <div className="form-grid">
          <Field label="Requests allowed" name="limit" error={err} hint="Per client address, in each window.">
            {(p) => <Input {...p} type="number" min={1} step={1} inputMode="numeric" value={limit} onChange={(e) => setLimit(e.target.value)} />}
          </Field>
          <Field label="Window (seconds)" name="windowSeconds" error={err}>
            {(p) => <Input {...p} type="number" min={1} step={1} inputMode="numeric" value={windowSeconds} onChange={(e) => setWindowSeconds(e.target.value)} />}
          </Field>
        </div>
      ) : kind === 'ban' ? (
        <div className="form-grid">
          <Field label="Addresses" name="ips" error={err} hint="IP addresses or CIDR ranges, one per line.">
            {(p) => <TextArea {...p} rows={3} value={ips} onChange={(e) => setIps(e.target.value)} placeholder={'203.0.113.7\n198.51.100.0/24'} spellCheck={false} />}
          </Field>
          <Field label="Expires (optional)" name="expiresAt" error={err} hint="Your local time; empty: never.">
            {(p) => <Input {...p} type="datetime-local" value={expiresAt} onChange={(e) => setExpiresAt(e.target.value)} />}
          </Field>
        </div>
      ) : (
        <div className="form-grid">
          <Field label="Action" name="action" error={err} hint="Allow: only these ranges pass on the path.">
            {(p) => (
              <Select {...p} value={action} onChange={(e) => setAction(e.target.value as 'allow' | 'deny')}>
                <option value="deny">Deny these ranges</option>
                <option value="allow">Allow only these ranges</option>
              </Select>
            )}
          </Field>
          <Field label="Ranges" name="cidrs" error={err} hint="IP addresses or CIDR ranges, one per line.">
            {(p) => <TextArea {...p} rows={3} value={cidrs} onChange={(e) => setCidrs(e.target.value)} placeholder={'10.0.0.0/8'} spellCheck={false} />}
          </Field>
        </div>
      )}
      {elsewhere ? <ErrorNotice error={err} title="Not saved" /> : null}
      <div className="form-actions">
        <Button type="submit" variant="primary" busy={save.isPending}>
          {rule ? 'Save rule' : 'Add rule'}
        </Button>
        <Button onClick={onCancel}>Cancel</Button>
      </div>
    </form>
  );
}
