import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { api, data } from '../../api/client';
import { Button, ErrorNotice, errorNames, Field, Input, Spinner } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { EdgeLink } from './app-url';
import { DomainList } from './domains-list';
import { domainsKey, fetchDomains, type Domain } from './domains-model';
import { useProjectPatch, useShown, type Project } from './settings-common';
import { useProject } from './shell';
import './settings.css';

/** Custom domains (add, verify, remove; TLS status), the free and primary domain, and the HTTPS switches. */
export default function DomainsPage({ params }: PageProps) {
  const id = params.id!;
  const project = useProject(id);
  const domains = useQuery({ queryKey: domainsKey(id), queryFn: () => fetchDomains(id) });
  // Adding, verifying and removing domains and the HTTPS switches need write on the project.
  const canWrite = useAccess().project(id, 'write');
  if (!project.data) return <Spinner />;
  const p = project.data;
  return (
    <div className="stack settings-page">
      <h2>Domains</h2>
      <dl className="facts card">
        <dt>Served at</dt>
        <dd>
          <EdgeLink projectId={id} host={p.routes.primaryDomain} />{' '}
          <span className="muted">(primary)</span>
        </dd>
        <dt>Free domain</dt>
        <dd>
          <EdgeLink projectId={id} host={p.routes.freeDomain} />{' '}
          <span className="muted">always served</span>
        </dd>
      </dl>
      {canWrite ? <AddDomain projectId={id} /> : null}
      <h3>Custom domains</h3>
      {domains.isPending ? <Spinner /> : domains.error ? <ErrorNotice error={domains.error} title="Could not load the domains" /> : <DomainList projectId={id} domains={domains.data} canWrite={canWrite} />}
      <HttpsSettings project={p} canWrite={canWrite} />
    </div>
  );
}

function AddDomain({ projectId }: { projectId: string }) {
  const qc = useQueryClient();
  const toast = useToast();
  const [domain, setDomain] = useState('');
  const [primary, setPrimary] = useState(false);
  const add = useMutation({
    mutationFn: () => data(api.POST('/api/projects/{id}/domains', { params: { path: { id: projectId } }, body: { domain: domain.trim(), primary } })),
    onSuccess: (added) => {
      qc.setQueryData<Domain[]>(domainsKey(projectId), (list) => [...(list ?? []).map((d) => (added.primary ? { ...d, primary: false } : d)), added]);
      void qc.invalidateQueries({ queryKey: ['project', projectId], exact: true });
      toast(added.verified ? `${added.domain} added and verified` : `${added.domain} added: verify it with its TXT record`);
      setDomain('');
      setPrimary(false);
    },
  });
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault();
        add.mutate();
      }}
    >
      <h3>Add a domain</h3>
      <Field label="Domain" name="domain" error={add.error} hint="A name you control, such as www.example.com. Point it at this server, then verify it.">
        {(p) => <Input {...p} value={domain} onChange={(e) => setDomain(e.target.value)} placeholder="www.example.com" autoComplete="off" spellCheck={false} required />}
      </Field>
      <label className="check field">
        <input type="checkbox" checked={primary} onChange={(e) => setPrimary(e.target.checked)} /> Make it the primary domain
      </label>
      {add.error && !errorNames(add.error, 'domain') ? <ErrorNotice error={add.error} title="Not added" /> : null}
      <Button type="submit" variant="primary" busy={add.isPending}>
        Add domain
      </Button>
    </form>
  );
}

/** `config.httpsRedirect` (null: on once a certificate is issued) and `config.hsts`, saved as they are toggled. */
function HttpsSettings({ project, canWrite }: { project: Project; canWrite: boolean }) {
  const patch = useProjectPatch(
    project.id,
    (p, body) => ({ ...p, config: { ...p.config, ...(body.httpsRedirect !== undefined ? { httpsRedirect: body.httpsRedirect } : {}), ...(body.hsts != null ? { hsts: body.hsts } : {}) } }),
    'HTTPS settings saved',
  );
  const configured = project.config.httpsRedirect;
  const [redirect, chooseRedirect, dropRedirect] = useShown(configured !== false);
  const [hsts, chooseHsts, dropHsts] = useShown(project.config.hsts);
  return (
    <section className="card" aria-labelledby="https-title">
      <h3 id="https-title">HTTPS</h3>
      <div className="check-list" role="group" aria-labelledby="https-title">
        <label className="check">
          <input
            type="checkbox"
            checked={redirect}
            disabled={!canWrite}
            onChange={(e) => {
              chooseRedirect(e.target.checked);
              patch.mutate({ httpsRedirect: e.target.checked }, { onError: dropRedirect });
            }}
          />{' '}
          Redirect plain HTTP to HTTPS
        </label>
        <span className="muted">
          {configured === null ? 'Default: on for each domain once it has a certificate. ' : null}Answers 308 to https:// (ACME challenges excepted).
        </span>
        <label className="check">
          <input
            type="checkbox"
            checked={hsts}
            disabled={!canWrite}
            onChange={(e) => {
              chooseHsts(e.target.checked);
              patch.mutate({ hsts: e.target.checked }, { onError: dropHsts });
            }}
          />{' '}
          Send Strict-Transport-Security (HSTS)
        </label>
        <span className="muted">Browsers then refuse plain HTTP for this site; turn on only once HTTPS works.</span>
      </div>
    </section>
  );
}
