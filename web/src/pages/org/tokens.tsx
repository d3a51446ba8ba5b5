import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { PageProps } from '../../app';
import { api, data, messageOf } from '../../api/client';
import { Button, ConfirmDialog, EmptyState, ErrorNotice, Spinner, StatusBadge } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { useToast } from '../../ui/toast';
import { useSession } from '../../session';
import { RelTime } from './org-api';
import { TokenForm, tokenKeys } from './token-form';
import './org.css';

const fetchTokens = () => data(api.GET('/api/auth/tokens'));
type Token = Awaited<ReturnType<typeof fetchTokens>>[number];

function stateOf(t: Token): 'active' | 'revoked' | 'expired' {
  if (t.revokedAt) return 'revoked';
  if (t.expiresAt && Date.parse(t.expiresAt) <= Date.now()) return 'expired';
  return 'active';
}

function TokenTable() {
  const me = useSession();
  const qc = useQueryClient();
  const toast = useToast();
  const tokens = useQuery({ queryKey: tokenKeys.all, queryFn: fetchTokens });
  const [revoking, setRevoking] = useState<Token | null>(null);
  const revoke = useMutation({
    mutationFn: (id: string) => data(api.DELETE('/api/auth/tokens/{id}', { params: { path: { id } } })),
    // Shown revoked at once; back to active if the server refuses.
    onMutate: async (id) => {
      setRevoking(null);
      await qc.cancelQueries({ queryKey: tokenKeys.all });
      const before = qc.getQueryData<Token[]>(tokenKeys.all);
      qc.setQueryData<Token[]>(tokenKeys.all, (list) => list?.map((t) => (t.id === id ? { ...t, revokedAt: new Date().toISOString() } : t)));
      return { before };
    },
    onError: (err, _id, ctx) => {
      if (ctx?.before) qc.setQueryData(tokenKeys.all, ctx.before);
      toast(`Could not revoke the token: ${messageOf(err)}`, 'error');
    },
    onSuccess: (t) => toast(`Token “${t.name}” revoked`),
    onSettled: () => qc.invalidateQueries({ queryKey: tokenKeys.all }),
  });
  if (tokens.isPending) return <Spinner label="Loading tokens" />;
  if (tokens.error) return <ErrorNotice error={tokens.error} title="Could not load your tokens" />;
  if (!tokens.data.length) return <EmptyState title="No tokens yet">For the CLI or CI: create one above.</EmptyState>;
  const orgName = (id: string) => me.orgs.find((o) => o.id === id)?.name ?? 'an organization you left';
  return (
    <>
      <div className="table-wrap">
        <table className="org-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Organization</th>
              <th scope="col">Scopes</th>
              <th scope="col">Last used</th>
              <th scope="col">Expires</th>
              <th scope="col">State</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {tokens.data.map((t) => {
              const state = stateOf(t);
              return (
                <tr key={t.id}>
                  <td data-label="Name">
                    <span>
                      {t.name}
                      <span className="sub">
                        <code>{t.prefix}…</code> · made <RelTime at={t.createdAt} />
                      </span>
                    </span>
                  </td>
                  <td data-label="Organization">{orgName(t.orgId)}</td>
                  <td data-label="Scopes">{t.scopes ? t.scopes.length ? <code>{t.scopes.join(' ')}</code> : <span className="muted">none</span> : <span className="muted">all your rights</span>}</td>
                  <td data-label="Last used">
                    <RelTime at={t.lastUsedAt} />
                  </td>
                  <td data-label="Expires">
                    <RelTime at={t.expiresAt} />
                  </td>
                  <td data-label="State">
                    <StatusBadge status={state} />
                  </td>
                  <td className="actions">
                    {state === 'revoked' ? null : (
                      <Button small variant="danger" onClick={() => setRevoking(t)} aria-label={`Revoke the token ${t.name}`}>
                        Revoke
                      </Button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <ConfirmDialog
        open={!!revoking}
        title={`Revoke “${revoking?.name}”?`}
        confirmLabel="Revoke token"
        onConfirm={() => revoking && revoke.mutate(revoking.id)}
        onCancel={() => setRevoking(null)}
      >
        <p>Every program using this token is refused from its next request, and its open streams end. This cannot be undone: make a new token instead.</p>
      </ConfirmDialog>
    </>
  );
}

export default function TokensPage(_: PageProps) {
  return (
    <>
      <PageHeader title="Access tokens" sub="Personal access tokens for the CLI, scripts and CI (Authorization: Bearer …)" />
      <TokenForm />
      <h2>Your tokens</h2>
      <TokenTable />
    </>
  );
}
