import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, data } from '../../api/client';
import { Button, CopyButton, ErrorNotice, errorNames, Field, Input, Notice, Select } from '../../ui/controls';
import { GrantRows, toEntry, type GrantDraft } from './grant-rows';
import { invitationKeys, ROLE_HINT, ROLES } from './org-api';

export const inviteLink = (id: string) => `${window.location.origin}/invite/${id}`;

/** The link to pass on, with its copy button (`short`: only its path, where room is scarce). */
export function InviteLink({ id, short }: { id: string; short?: boolean }) {
  const link = inviteLink(id);
  return (
    <span className="link-line">
      <code title={link}>{short ? `/invite/${id}` : link}</code>
      <CopyButton text={link} label="Copy link" />
    </span>
  );
}

/** Invite by email with a role and pending grants (POST /api/permissions/invite-with-grants). */
export function InviteForm({ orgName }: { orgName: string }) {
  const qc = useQueryClient();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('');
  const [rows, setRows] = useState<GrantDraft[]>([]);
  const invite = useMutation({
    mutationFn: () =>
      data(
        api.POST('/api/permissions/invite-with-grants', {
          body: { email: email.trim(), ...(role ? { role } : {}), ...(rows.length ? { grants: rows.map(toEntry) } : {}) },
        }),
      ),
    onSuccess: () => {
      setEmail('');
      setRole('');
      setRows([]);
      void qc.invalidateQueries({ queryKey: invitationKeys.all });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    invite.mutate();
  };
  const fieldError = invite.error && (errorNames(invite.error, 'email') || errorNames(invite.error, 'role') || errorNames(invite.error, 'grants'));
  const sent = invite.data;
  return (
    <form className="card" onSubmit={submit} aria-labelledby="invite-title" noValidate>
      <h2 id="invite-title" style={{ marginTop: 0 }}>
        Invite someone to {orgName}
      </h2>
      <div className="form-cols">
        <Field label="Email" name="email" error={invite.error} hint="Berth sends no email: you pass the link on.">
          {(p) => <Input {...p} type="email" autoComplete="off" value={email} onChange={(e) => setEmail(e.target.value)} required />}
        </Field>
        <Field label="Role" name="role" error={invite.error} hint={role ? ROLE_HINT[role as keyof typeof ROLE_HINT] : 'restricted when grants are attached, else member'}>
          {(p) => (
            <Select {...p} value={role} onChange={(e) => setRole(e.target.value)}>
              <option value="">Automatic</option>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </Select>
          )}
        </Field>
      </div>
      <GrantRows
        rows={rows}
        onChange={setRows}
        error={invite.error}
        legend="Grants (given when the invitation is accepted)"
        empty="No grants. A restricted member sees only what grants give; members and admins do not need any."
      />
      {invite.error && !fieldError ? <ErrorNotice error={invite.error} title="Could not invite" /> : null}
      {sent ? (
        <Notice kind="ok">
          <div className="stack">
            <p style={{ margin: 0 }}>
              Invited <strong>{sent.email}</strong> as {sent.role}
              {sent.pendingGrantCount ? ` with ${sent.pendingGrantCount} grant${sent.pendingGrantCount === 1 ? '' : 's'}` : ''}. Send them this link:
            </p>
            <InviteLink id={sent.id} />
          </div>
        </Notice>
      ) : null}
      <div className="form-actions">
        <Button type="submit" variant="primary" busy={invite.isPending}>
          Send invitation
        </Button>
      </div>
    </form>
  );
}
