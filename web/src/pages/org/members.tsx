import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import type { PageProps } from '../../app';
import { api, data, messageOf } from '../../api/client';
import { Button, ConfirmDialog, EmptyState, ErrorNotice, Select, Spinner } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { useToast } from '../../ui/toast';
import { useResetSession, useSession } from '../../session';
import { memberKeys, RelTime, ROLE_HINT, ROLES, TeamAdminOnly, useMembers, type Member } from './org-api';
import './org.css';

/** A role change shows at once and goes back if the API refuses it (its error says why). */
function useChangeRole() {
  const qc = useQueryClient();
  const reset = useResetSession();
  const me = useSession();
  return useMutation({
    mutationFn: (v: { userId: string; role: string }) => data(api.PATCH('/api/permissions/members/{userId}', { params: { path: { userId: v.userId } }, body: { role: v.role } })),
    onMutate: async (v) => {
      await qc.cancelQueries({ queryKey: memberKeys.all });
      const before = qc.getQueryData<Member[]>(memberKeys.all);
      qc.setQueryData<Member[]>(memberKeys.all, (list) => list?.map((m) => (m.userId === v.userId ? { ...m, role: v.role } : m)));
      return { before };
    },
    onError: (_err, _v, ctx) => {
      if (ctx?.before) qc.setQueryData(memberKeys.all, ctx.before);
    },
    onSuccess: async (_m, v) => {
      // Changing your own role changes what the whole dashboard may show.
      if (v.userId === me.user.id) await reset();
    },
    onSettled: () => qc.invalidateQueries({ queryKey: memberKeys.all }),
  });
}

function MemberTable() {
  const me = useSession();
  const qc = useQueryClient();
  const toast = useToast();
  const reset = useResetSession();
  const [, navigate] = useLocation();
  const members = useMembers();
  const changeRole = useChangeRole();
  const [removing, setRemoving] = useState<Member | null>(null);
  const remove = useMutation({
    mutationFn: (userId: string) => data(api.DELETE('/api/permissions/members/{userId}', { params: { path: { userId } } })),
    onSuccess: async (out) => {
      const who = removing?.email ?? 'the member';
      setRemoving(null);
      toast(`${who} was removed`);
      if (out.userId === me.user.id) {
        await reset();
        navigate('/');
        return;
      }
      void qc.invalidateQueries({ queryKey: memberKeys.all });
    },
  });
  if (members.isPending) return <Spinner label="Loading members" />;
  if (members.error) return <ErrorNotice error={members.error} title="Could not load the members" />;
  if (!members.data.length) return <EmptyState title="No members" />;
  const failed = changeRole.isError ? changeRole.variables?.userId : undefined;
  return (
    <>
      <div className="table-wrap">
        <table className="org-table">
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Role</th>
              <th scope="col">Joined</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {members.data.map((m) => {
              const self = m.userId === me.user.id;
              const selectId = `role-${m.userId}`;
              return (
                <tr key={m.userId}>
                  <td data-label="Member">
                    <span>
                      {m.name || m.email}
                      {self ? <span className="muted"> (you)</span> : null}
                      {m.name ? <span className="sub">{m.email}</span> : null}
                    </span>
                  </td>
                  <td data-label="Role">
                    <span>
                      <label htmlFor={selectId} className="sr-only">
                        Role of {m.email}
                      </label>
                      <Select
                        id={selectId}
                        value={m.role}
                        disabled={changeRole.isPending && changeRole.variables?.userId === m.userId}
                        aria-invalid={failed === m.userId || undefined}
                        aria-describedby={failed === m.userId ? `${selectId}-err` : undefined}
                        onChange={(e) => changeRole.mutate({ userId: m.userId, role: e.target.value })}
                      >
                        {ROLES.map((r) => (
                          <option key={r} value={r} title={ROLE_HINT[r]}>
                            {r}
                          </option>
                        ))}
                      </Select>
                      {failed === m.userId ? (
                        <p className="row-error" id={`${selectId}-err`} role="alert">
                          {messageOf(changeRole.error)}
                        </p>
                      ) : null}
                      {m.role === 'restricted' ? (
                        <Link href={`/org/grants?user=${m.userId}`} className="sub">
                          Grants of {m.name || m.email}
                        </Link>
                      ) : null}
                    </span>
                  </td>
                  <td data-label="Joined">
                    <RelTime at={m.joinedAt} />
                  </td>
                  <td className="actions">
                    <Button small variant="danger" onClick={() => (remove.reset(), setRemoving(m))} aria-label={`Remove ${m.email}`}>
                      {self ? 'Leave' : 'Remove'}
                    </Button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <ConfirmDialog
        open={!!removing}
        title={removing?.userId === me.user.id ? `Leave ${me.org?.name}?` : `Remove ${removing?.email}?`}
        confirmLabel={removing?.userId === me.user.id ? 'Leave' : 'Remove member'}
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => removing && remove.mutate(removing.userId)}
        onCancel={() => setRemoving(null)}
      >
        <p>
          {removing?.userId === me.user.id ? 'You' : <strong>{removing?.email}</strong>} will no longer be a member of <strong>{me.org?.name}</strong>. Their
          grants in it are deleted, and their tokens and sessions acting in it stop working at once.
        </p>
      </ConfirmDialog>
    </>
  );
}

export default function MembersPage(_: PageProps) {
  const me = useSession();
  const team = !!me.org?.isTeam && (me.role === 'owner' || me.role === 'admin');
  return (
    <>
      <PageHeader title="Members" sub={me.org ? `Who belongs to ${me.org.name}, and with which role` : undefined}>
        {team ? (
          <Link href="/org/invitations" className="btn btn-primary">
            Invite someone
          </Link>
        ) : null}
      </PageHeader>
      <TeamAdminOnly what="members">
        <MemberTable />
        <p className="muted">
          Roles: {ROLES.map((r) => `${r} (${ROLE_HINT[r]})`).join('; ')}. Nobody sets a role above their own, only an owner changes an owner, and the last
          owner stays.
        </p>
      </TeamAdminOnly>
    </>
  );
}
