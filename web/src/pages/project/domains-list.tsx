import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, data, messageOf } from '../../api/client';
import { Button, CopyButton, EmptyState, StatusBadge, TimeAgo } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { domainsKey, type Domain } from './domains-model';
import { OpenConfirm, type Project } from './settings-common';
import { projectQuery } from './shell';

/** The project's custom domains: verification (with the TXT record to create), TLS, verify and remove. */
export function DomainList({ projectId, domains, canWrite }: { projectId: string; domains: Domain[]; canWrite: boolean }) {
  const [removing, setRemoving] = useState<Domain | null>(null);
  const qc = useQueryClient();
  const toast = useToast();
  const remove = useMutation({
    mutationFn: (d: Domain) => data(api.DELETE('/api/projects/{id}/domains/{domain}', { params: { path: { id: projectId, domain: d.domain } } })),
    onSuccess: (gone) => {
      qc.setQueryData<Domain[]>(domainsKey(projectId), (list) => list?.filter((d) => d.domain !== gone.domain));
      qc.setQueryData<Project>(projectQuery(projectId).queryKey, (p) => (p ? { ...p, routes: { ...p.routes, primaryDomain: gone.primaryDomain, domains: p.routes.domains.filter((d) => d.domain !== gone.domain) } } : p));
      toast(`${gone.domain} removed`);
      setRemoving(null);
    },
  });
  if (domains.length === 0) {
    return (
      <EmptyState title="No custom domains">
        <p>The project answers at its free domain. Add a domain above to serve it at your own name.</p>
      </EmptyState>
    );
  }
  return (
    <>
      <div className="table-wrap">
        <table className="stack-table">
          <thead>
            <tr>
              <th scope="col">Domain</th>
              <th scope="col">Verification</th>
              <th scope="col">Certificate</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          {domains.map((d) => (
            <DomainRow key={d.domain} projectId={projectId} domain={d} canWrite={canWrite} onRemove={() => (remove.reset(), setRemoving(d))} />
          ))}
        </table>
      </div>
      <OpenConfirm
        open={removing !== null}
        title={`Remove ${removing?.domain ?? ''}?`}
        confirmLabel="Remove domain"
        busy={remove.isPending}
        error={remove.error}
        onConfirm={() => removing && remove.mutate(removing)}
        onCancel={() => setRemoving(null)}
      >
        <p>
          The edge stops serving the project at <strong>{removing?.domain}</strong>
          {removing?.tls.status !== 'none' ? ' and its certificate is deleted' : ''}.
        </p>
        {removing?.primary ? <p>It is the primary domain: the free domain becomes the address the project is served at.</p> : null}
        <p className="muted">Adding it again later needs a new verification.</p>
      </OpenConfirm>
    </>
  );
}

function DomainRow({ projectId, domain: d, canWrite, onRemove }: { projectId: string; domain: Domain; canWrite: boolean; onRemove(): void }) {
  const qc = useQueryClient();
  const toast = useToast();
  const verify = useMutation({
    mutationFn: () => data(api.POST('/api/projects/{id}/domains/{domain}/verify', { params: { path: { id: projectId, domain: d.domain } } })),
    onSuccess: (v) => {
      qc.setQueryData<Domain[]>(domainsKey(projectId), (list) => list?.map((x) => (x.domain === v.domain ? v : x)));
      void qc.invalidateQueries({ queryKey: projectQuery(projectId).queryKey, exact: true });
      toast(`${v.domain} verified`);
    },
  });
  const errId = `verify-${d.domain}`;
  // One row group per domain: its row, then (while unverified) the DNS record that proves it.
  return (
    <tbody className="domain-group">
      <tr>
        <td>
          <span className="domain-name">{d.domain}</span> {d.primary ? <span className="badge badge-ok">primary</span> : null}
          <div className="muted tls-detail">
            added <TimeAgo at={d.createdAt} />
          </div>
        </td>
        <td data-label="Verification">{d.verified ? <StatusBadge status="verified" /> : <span className="badge badge-warn">not verified</span>}</td>
        <td data-label="Certificate">
          <StatusBadge status={d.tls.status} />
          <div className="muted tls-detail">
            {d.tls.status === 'none' ? (d.verified ? 'no certificate (HTTPS is off on this server, or not requested yet)' : 'requested once verified') : null}
            {d.tls.status === 'pending' ? 'being issued' : null}
            {d.tls.expiresAt ? <div>expires {new Date(d.tls.expiresAt).toLocaleDateString()}</div> : null}
            {d.tls.issuer ? <div>by {d.tls.issuer}</div> : null}
          </div>
          {d.tls.error ? <div className="field-error tls-detail">{d.tls.error}</div> : null}
        </td>
        <td className="actions">
          {!canWrite ? null : !d.verified ? (
            <Button small variant="primary" busy={verify.isPending} onClick={() => verify.mutate()} aria-label={`Verify ${d.domain}`} aria-describedby={verify.error ? errId : undefined}>
              Verify
            </Button>
          ) : null}{' '}
          {canWrite ? (
            <Button small variant="danger" onClick={onRemove} aria-label={`Remove ${d.domain}`}>
              Remove
            </Button>
          ) : null}
        </td>
      </tr>
      {!d.verified && d.verification ? (
        <tr className="domain-proof">
          <td colSpan={4}>
            <p className="tls-detail">At your DNS provider, create this record for {d.domain}, then press Verify:</p>
            <dl className="dns-record tls-detail">
              <div>
                <dt>Type</dt>
                <dd>{d.verification.type}</dd>
              </div>
              <div>
                <dt>Name</dt>
                <dd>
                  <code>{d.verification.name}</code>
                </dd>
                <dd>
                  <CopyButton text={d.verification.name} label="Copy name" />
                </dd>
              </div>
              <div>
                <dt>Value</dt>
                <dd>
                  <code>{d.verification.value}</code>
                </dd>
                <dd>
                  <CopyButton text={d.verification.value} label="Copy value" />
                </dd>
              </div>
            </dl>
            {verify.error ? (
              <p className="field-error" id={errId} role="alert">
                {messageOf(verify.error)}
              </p>
            ) : null}
          </td>
        </tr>
      ) : null}
    </tbody>
  );
}
