import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useSearchParams } from 'wouter';
import type { PageProps } from '../../app';
import { api, data } from '../../api/client';
import { Button, ConfirmDialog, EmptyState, ErrorNotice, Field, Notice, Select, Spinner } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { useToast } from '../../ui/toast';
import { useSession } from '../../session';
import { AddGrantForm, ReplaceGrants } from './grant-editor';
import { grantKeys, RelTime, TeamAdminOnly, typeLabel, useGrants, useMembers, useResourceLabel, type Grant, type Member } from './org-api';
import './org.css';

const who = (m: Member) => m.name || m.email;

/** One member's grants: the table, delete (confirmed), and replacing the whole set. */
function MemberGrants({ member, grants, onDelete }: { member: Member; grants: Grant[]; onDelete(g: Grant): void }) {
  const label = useResourceLabel();
  const [editing, setEditing] = useState(false);
  const headingId = `grants-of-${member.userId}`;
  return (
    <section className="card" aria-label={`Grants of ${member.email}`}>
      <div className="page-header" style={{ marginBottom: '0.5rem' }}>
        <div>
          <h2 id={headingId} style={{ margin: 0 }}>
            {who(member)}
          </h2>
          <p className="muted" style={{ margin: 0 }}>
            {member.name ? `${member.email} · ` : ''}
            {member.role}
          </p>
        </div>
        {editing ? null : (
          <Button small onClick={() => setEditing(true)} aria-label={`Edit every grant of ${member.email}`}>
            Edit all
          </Button>
        )}
      </div>
      {member.role !== 'restricted' ? <Notice kind="info">Grants count only for the restricted role: as {member.role}, these are dormant until the role changes.</Notice> : null}
      {editing ? (
        <ReplaceGrants member={member} grants={grants} onDone={() => setEditing(false)} />
      ) : grants.length === 0 ? (
        <p className="muted">No grants: this member sees nothing of the organization yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="org-table">
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Resource</th>
                <th scope="col">Permissions</th>
                <th scope="col">Changed</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {grants.map((g) => (
                <tr key={g.id}>
                  <td data-label="Type">{typeLabel(g.resourceType)}</td>
                  <td data-label="Resource">{label(g.resourceType, g.resourceId)}</td>
                  <td data-label="Permissions">{g.permissions.join(', ')}</td>
                  <td data-label="Changed">
                    <RelTime at={g.updatedAt} />
                  </td>
                  <td className="actions">
                    <Button small variant="danger" onClick={() => onDelete(g)} aria-label={`Delete the grant on ${label(g.resourceType, g.resourceId)} of ${member.email}`}>
                      Delete
                    </Button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function GrantsBody() {
  const qc = useQueryClient();
  const toast = useToast();
  const label = useResourceLabel();
  const members = useMembers();
  const grants = useGrants();
  const [search, setSearch] = useSearchParams();
  const focus = search.get('user') ?? '';
  const [adding, setAdding] = useState(focus);
  const [deleting, setDeleting] = useState<Grant | null>(null);
  const del = useMutation({
    mutationFn: (id: string) => data(api.DELETE('/api/permissions/grants/{id}', { params: { path: { id } } })),
    onSuccess: () => {
      setDeleting(null);
      toast('Grant deleted');
      void qc.invalidateQueries({ queryKey: grantKeys.all });
    },
  });
  if (members.isPending || grants.isPending) return <Spinner label="Loading grants" />;
  if (members.error || grants.error) return <ErrorNotice error={members.error ?? grants.error} title="Could not load the grants" />;
  const byUser = new Map<string, Grant[]>();
  for (const g of grants.data) byUser.set(g.userId, [...(byUser.get(g.userId) ?? []), g]);
  // Restricted members first (grants are all they have), then anyone else who holds grants.
  const shown = members.data
    .filter((m) => m.role === 'restricted' || byUser.has(m.userId))
    .filter((m) => !focus || m.userId === focus)
    .sort((a, b) => Number(b.role === 'restricted') - Number(a.role === 'restricted') || who(a).localeCompare(who(b)));
  const deletingMember = deleting ? members.data.find((m) => m.userId === deleting.userId) : undefined;
  return (
    <>
      <AddGrantForm members={members.data} userId={adding} onUserChange={setAdding} />
      <div className="filters">
        <Field label="Show the grants of">
          {(p) => (
            <Select {...p} value={focus} onChange={(e) => {
                setSearch(e.target.value ? { user: e.target.value } : {});
                if (e.target.value) setAdding(e.target.value);
              }}>
              <option value="">Every member with grants</option>
              {members.data.map((m) => (
                <option key={m.userId} value={m.userId}>
                  {who(m)} ({m.role})
                </option>
              ))}
            </Select>
          )}
        </Field>
      </div>
      {shown.length === 0 ? (
        <EmptyState title={focus ? 'This member has no grants' : 'No grants yet'}>
          <p>Grants give restricted members access to single projects, backup destinations or the audit log.</p>
        </EmptyState>
      ) : (
        shown.map((m) => <MemberGrants key={m.userId} member={m} grants={byUser.get(m.userId) ?? []} onDelete={(g) => (del.reset(), setDeleting(g))} />)
      )}
      <ConfirmDialog
        open={!!deleting}
        title="Delete this grant?"
        confirmLabel="Delete grant"
        busy={del.isPending}
        error={del.error}
        onConfirm={() => deleting && del.mutate(deleting.id)}
        onCancel={() => setDeleting(null)}
      >
        {deleting ? (
          <p>
            <strong>{deletingMember ? who(deletingMember) : 'The member'}</strong> loses {deleting.permissions.join(', ')} on {typeLabel(deleting.resourceType).toLowerCase()}{' '}
            <strong>{label(deleting.resourceType, deleting.resourceId)}</strong> at once.
          </p>
        ) : null}
      </ConfirmDialog>
    </>
  );
}

export default function GrantsPage(_: PageProps) {
  const me = useSession();
  return (
    <>
      <PageHeader title="Grants" sub={me.org ? `What restricted members of ${me.org.name} may see and do, resource by resource` : undefined} />
      <TeamAdminOnly what="grants">
        <GrantsBody />
      </TeamAdminOnly>
    </>
  );
}
