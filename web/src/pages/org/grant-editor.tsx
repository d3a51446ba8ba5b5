import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, call, data } from '../../api/client';
import { Button, ErrorNotice, Field, Select } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { GrantRow, GrantRows, newDraft, toEntry, type GrantDraft } from './grant-rows';
import { grantKeys, type Grant, type Member } from './org-api';

const who = (m: Member) => m.name || m.email;

/** Adds (or changes) one grant of a member: POST /api/permissions/grants, keyed on member and resource. */
export function AddGrantForm({ members, userId, onUserChange }: { members: Member[]; userId: string; onUserChange(id: string): void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const [draft, setDraft] = useState<GrantDraft>(newDraft);
  const add = useMutation({
    mutationFn: () => call(api.POST('/api/permissions/grants', { body: { userId, ...toEntry(draft) } })),
    onSuccess: (out) => {
      const m = members.find((x) => x.userId === userId);
      toast(out.data ? `Granted ${out.data.permissions.join(', ')} to ${m ? who(m) : 'the member'}` : 'No permissions: that grant is revoked');
      setDraft(newDraft());
      void qc.invalidateQueries({ queryKey: grantKeys.all });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate();
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="add-grant-title">
      <h2 id="add-grant-title" style={{ marginTop: 0 }}>
        Add a grant
      </h2>
      <Field label="Member" name="userId" error={add.error}>
        {(p) => (
          <Select {...p} value={userId} onChange={(e) => onUserChange(e.target.value)}>
            <option value="">Choose a member</option>
            {members.map((m) => (
              <option key={m.userId} value={m.userId}>
                {who(m)} ({m.role})
              </option>
            ))}
          </Select>
        )}
      </Field>
      <GrantRow draft={draft} path="" index={0} error={add.error} onChange={setDraft} />
      <ErrorNotice error={add.error} fields={['userId', 'resourceType', 'resourceId', 'permissions']} title="Could not grant" />
      <p className="field-hint">A grant on a resource the member already has replaces its permissions; none checked revokes it.</p>
      <div className="form-actions">
        <Button type="submit" variant="primary" busy={add.isPending}>
          Add grant
        </Button>
      </div>
    </form>
  );
}

/** Replaces a member's whole grant set at once: PUT /api/permissions/grants. */
export function ReplaceGrants({ member, grants, onDone }: { member: Member; grants: Grant[]; onDone(): void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const [rows, setRows] = useState<GrantDraft[]>(() => grants.map((g) => ({ resourceType: g.resourceType, resourceId: g.resourceId, permissions: [...g.permissions] })));
  const save = useMutation({
    mutationFn: () => data(api.PUT('/api/permissions/grants', { body: { userId: member.userId, grants: rows.map(toEntry) } })),
    onSuccess: (set) => {
      toast(`${who(member)} now has ${set.length} grant${set.length === 1 ? '' : 's'}`);
      void qc.invalidateQueries({ queryKey: grantKeys.all });
      onDone();
    },
  });
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate();
      }}
    >
      <GrantRows rows={rows} onChange={setRows} error={save.error} legend={`Every grant of ${who(member)}`} empty="No grants: saving removes them all." />
      <ErrorNotice error={save.error} fields={['grants']} title="Could not save" />
      <div className="form-actions">
        <Button type="submit" variant="primary" busy={save.isPending}>
          Save grants
        </Button>
        <Button onClick={onDone}>Cancel</Button>
      </div>
    </form>
  );
}
