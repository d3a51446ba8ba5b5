import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, data } from '../../api/client';
import { Button, CopyButton, ErrorNotice, errorNames, Field, Input, Select } from '../../ui/controls';
import { useSession } from '../../session';

export const tokenKeys = { all: ['account', 'tokens'] as const };

/** The areas a token's scopes narrow (permission tags `<area>:<level>`, contract section 4). */
export const SCOPE_AREAS: Array<{ tag: string; label: string; levels: string[] }> = [
  { tag: 'project', label: 'Projects', levels: ['list', 'read', 'write', 'admin'] },
  { tag: 'project:deployment', label: 'Deployments', levels: ['list', 'read', 'write', 'admin'] },
  { tag: 'backup_destination', label: 'Backups', levels: ['list', 'read', 'write', 'admin'] },
  { tag: 'gitprovider', label: 'Git provider', levels: ['list', 'read', 'write', 'admin'] },
  { tag: 'permissions', label: 'Members and permissions', levels: ['read', 'write', 'admin'] },
  { tag: 'audit', label: 'Audit log', levels: ['read'] },
  { tag: 'token', label: 'Access tokens', levels: ['read', 'write', 'admin'] },
];

const EXPIRY = [
  { days: '7', label: '7 days' },
  { days: '30', label: '30 days' },
  { days: '90', label: '90 days' },
  { days: '365', label: '1 year' },
  { days: '', label: 'Never' },
];

type NewToken = Awaited<ReturnType<typeof createToken>>;
function createToken(body: { name: string; expiresInDays?: number; scopes?: string[]; orgId?: string }) {
  return data(api.POST('/api/auth/tokens', { body }));
}

/** The new token, this once: copy it now, it is never shown again (only its hash is stored). */
function ShownOnce({ token, onDone }: { token: NewToken; onDone(): void }) {
  return (
    <section className="notice notice-warn stack" aria-labelledby="new-token-title">
      <h2 id="new-token-title" style={{ margin: 0 }}>
        Your new token “{token.name}”
      </h2>
      <p style={{ margin: 0 }}>
        <strong>Copy it now: it will not be shown again.</strong> Berth keeps only a hash of it. Anyone holding it acts as you
        {token.scopes ? ' within its scopes' : ''}.
      </p>
      <div className="secret">
        <code data-testid="new-token">{token.token}</code>
        <CopyButton text={token.token} label="Copy token" />
      </div>
      <div>
        <Button small onClick={onDone}>
          I have copied it
        </Button>
      </div>
    </section>
  );
}

/** Create a personal access token: name, the org it acts in, expiry, and scopes (or your full rights). */
export function TokenForm() {
  const me = useSession();
  const qc = useQueryClient();
  const [name, setName] = useState('');
  const [orgId, setOrgId] = useState(me.org?.id ?? me.orgs[0]?.id ?? '');
  const [expires, setExpires] = useState('90');
  const [limited, setLimited] = useState(false);
  const [levels, setLevels] = useState<Record<string, string>>({});
  // Held in this component only (never in the query cache): gone with the page.
  const [created, setCreated] = useState<NewToken | null>(null);
  const create = useMutation({
    mutationFn: () =>
      createToken({
        name: name.trim(),
        ...(expires ? { expiresInDays: Number(expires) } : {}),
        ...(limited ? { scopes: SCOPE_AREAS.filter((a) => levels[a.tag]).map((a) => `${a.tag}:${levels[a.tag]}`) } : {}),
        ...(orgId && orgId !== me.org?.id ? { orgId } : {}),
      }),
    onSuccess: (t) => {
      setCreated(t);
      setName('');
      setLevels({});
      setLimited(false);
      void qc.invalidateQueries({ queryKey: tokenKeys.all });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const scopesError = errorNames(create.error, 'scopes');
  return (
    <>
      {created ? <ShownOnce token={created} onDone={() => setCreated(null)} /> : null}
      <form className="card" onSubmit={submit} aria-labelledby="token-form-title">
        <h2 id="token-form-title" style={{ marginTop: 0 }}>
          Create a token
        </h2>
        <div className="form-cols">
          <Field label="Name" name="name" error={create.error} hint="What it is for: “CI deploys”, “laptop CLI”.">
            {(p) => <Input {...p} value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" maxLength={100} />}
          </Field>
          <Field label="Organization" name="orgId" error={create.error} hint="The token acts in this organization only.">
            {(p) => (
              <Select {...p} value={orgId} onChange={(e) => setOrgId(e.target.value)}>
                {me.orgs.map((o) => (
                  <option key={o.id} value={o.id}>
                    {o.name} ({o.role})
                  </option>
                ))}
              </Select>
            )}
          </Field>
          <Field label="Expires after" name="expiresInDays" error={create.error}>
            {(p) => (
              <Select {...p} value={expires} onChange={(e) => setExpires(e.target.value)}>
                {EXPIRY.map((x) => (
                  <option key={x.label} value={x.days}>
                    {x.label}
                  </option>
                ))}
              </Select>
            )}
          </Field>
        </div>
        <fieldset className="plain">
          <legend>Access</legend>
          <label className="check">
            <input type="radio" name="token-access" checked={!limited} onChange={() => setLimited(false)} /> Everything your role allows
          </label>
          <label className="check">
            <input type="radio" name="token-access" checked={limited} onChange={() => setLimited(true)} /> Only the scopes chosen below
          </label>
        </fieldset>
        {limited ? (
          <fieldset className="plain" aria-describedby={scopesError ? 'scopes-err' : undefined}>
            <legend>Scopes (a level includes the ones below it)</legend>
            <div className="scope-grid">
              {SCOPE_AREAS.map((a) => (
                <Field key={a.tag} label={a.label}>
                  {(p) => (
                    <Select {...p} value={levels[a.tag] ?? ''} onChange={(e) => setLevels({ ...levels, [a.tag]: e.target.value })}>
                      <option value="">No access</option>
                      {a.levels.map((l) => (
                        <option key={l} value={l}>
                          {l}
                        </option>
                      ))}
                    </Select>
                  )}
                </Field>
              ))}
            </div>
            {scopesError ? (
              <p className="field-error" id="scopes-err" role="alert">
                {create.error?.message}
              </p>
            ) : null}
          </fieldset>
        ) : null}
        <ErrorNotice error={create.error} fields={['name', 'expiresInDays', 'scopes', 'orgId']} title="Could not create the token" />
        <div className="form-actions">
          <Button type="submit" variant="primary" busy={create.isPending}>
            Create token
          </Button>
        </div>
      </form>
    </>
  );
}
