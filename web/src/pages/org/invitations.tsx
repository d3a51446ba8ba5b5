import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { PageProps } from '../../app';
import { api, data, messageOf } from '../../api/client';
import { Button, ConfirmDialog, EmptyState, ErrorNotice, Field, Select, Spinner, StatusBadge } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { useToast } from '../../ui/toast';
import { useSession } from '../../session';
import { InviteForm, InviteLink } from './invite-form';
import { INVITATION_FILTERS, invitationKeys, RelTime, TeamAdminOnly, typeLabel, useInvitations, useResourceLabel, type Invitation, type InvitationFilter } from './org-api';
import './org.css';

const FILTER_LABEL: Record<InvitationFilter, string> = {
  open: 'Unanswered (pending and expired)',
  pending: 'Pending',
  expired: 'Expired',
  accepted: 'Accepted',
  declined: 'Declined',
  cancelled: 'Cancelled',
  all: 'All',
};

function GrantsSummary({ inv }: { inv: Invitation }) {
  const label = useResourceLabel();
  if (!inv.pendingGrants.length) return <span className="muted">none</span>;
  return (
    <ul className="details">
      {inv.pendingGrants.map((g, i) => (
        <li key={i}>
          {typeLabel(g.resourceType)} <strong>{label(g.resourceType, g.resourceId)}</strong>: {g.permissions.join(', ')}
        </li>
      ))}
    </ul>
  );
}

function InvitationTable({ status }: { status: InvitationFilter }) {
  const qc = useQueryClient();
  const toast = useToast();
  const list = useInvitations(status);
  const [cancelling, setCancelling] = useState<Invitation | null>(null);
  const resend = useMutation({
    mutationFn: (id: string) => data(api.POST('/api/permissions/invitations/{id}/resend', { params: { path: { id } } })),
    onSuccess: (inv) => {
      toast(`Invitation to ${inv.email} renewed for 7 days`);
      void qc.invalidateQueries({ queryKey: invitationKeys.all });
    },
    onError: (err) => toast(`Could not resend: ${messageOf(err)}`, 'error'),
  });
  const cancel = useMutation({
    mutationFn: (id: string) => data(api.POST('/api/permissions/invitations/{id}/cancel', { params: { path: { id } } })),
    onSuccess: (inv) => {
      setCancelling(null);
      toast(`Invitation to ${inv.email} cancelled`);
      void qc.invalidateQueries({ queryKey: invitationKeys.all });
    },
  });
  if (list.isPending) return <Spinner label="Loading invitations" />;
  if (list.error) return <ErrorNotice error={list.error} title="Could not load the invitations" />;
  if (!list.data.length) return <EmptyState title={status === 'open' ? 'No invitations waiting for an answer' : `No ${FILTER_LABEL[status].toLowerCase()} invitations`} />;
  return (
    <>
      <div className="table-wrap">
        <table className="org-table">
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Status</th>
              <th scope="col">Grants</th>
              <th scope="col">Link</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((inv) => {
              const open = inv.status === 'pending' || inv.status === 'expired';
              return (
                <tr key={inv.id}>
                  <td data-label="Email">
                    <span>
                      {inv.email}
                      <span className="sub">
                        invited <RelTime at={inv.createdAt} />
                      </span>
                    </span>
                  </td>
                  <td data-label="Role">{inv.role}</td>
                  <td data-label="Status">
                    <span>
                      <StatusBadge status={inv.status} />
                      <span className="sub">
                        {inv.status === 'pending' ? (
                          <>
                            expires <RelTime at={inv.expiresAt} />
                          </>
                        ) : inv.respondedAt ? (
                          <RelTime at={inv.respondedAt} />
                        ) : inv.status === 'expired' ? (
                          <>
                            since <RelTime at={inv.expiresAt} />
                          </>
                        ) : null}
                      </span>
                    </span>
                  </td>
                  <td data-label="Grants">
                    <GrantsSummary inv={inv} />
                  </td>
                  <td data-label="Link">{open ? <InviteLink id={inv.id} short /> : <span className="muted">–</span>}</td>
                  <td className="actions">
                    {open ? (
                      <span className="row">
                        <Button small onClick={() => resend.mutate(inv.id)} busy={resend.isPending && resend.variables === inv.id} aria-label={`Resend the invitation to ${inv.email}`}>
                          Resend
                        </Button>
                        <Button small variant="danger" onClick={() => (cancel.reset(), setCancelling(inv))} aria-label={`Cancel the invitation to ${inv.email}`}>
                          Cancel
                        </Button>
                      </span>
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <ConfirmDialog
        open={!!cancelling}
        title="Cancel this invitation?"
        confirmLabel="Cancel invitation"
        busy={cancel.isPending}
        error={cancel.error}
        onConfirm={() => cancelling && cancel.mutate(cancelling.id)}
        onCancel={() => setCancelling(null)}
      >
        <p>
          The link sent to <strong>{cancelling?.email}</strong> stops working and its {cancelling?.pendingGrantCount ?? 0} pending grant
          {cancelling?.pendingGrantCount === 1 ? '' : 's'} are dropped. You can invite the same email again later.
        </p>
      </ConfirmDialog>
    </>
  );
}

export default function InvitationsPage(_: PageProps) {
  const me = useSession();
  const [status, setStatus] = useState<InvitationFilter>('open');
  return (
    <>
      <PageHeader title="Invitations" sub={me.org ? `Who is invited to ${me.org.name}, and the links to pass on` : undefined} />
      <TeamAdminOnly what="invitations">
        <InviteForm orgName={me.org?.name ?? ''} />
        <h2>Sent invitations</h2>
        <div className="filters">
          <Field label="Show">
            {(p) => (
              <Select {...p} value={status} onChange={(e) => setStatus(e.target.value as InvitationFilter)}>
                {INVITATION_FILTERS.map((s) => (
                  <option key={s} value={s}>
                    {FILTER_LABEL[s]}
                  </option>
                ))}
              </Select>
            )}
          </Field>
        </div>
        <InvitationTable status={status} />
      </TeamAdminOnly>
    </>
  );
}
