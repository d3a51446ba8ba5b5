import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import type { PageProps } from '../../app';
import { api, call, data } from '../../api/client';
import { useResetSession } from '../../session';
import { Button, ErrorNotice, errorNames, Field, Input } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { useToast } from '../../ui/toast';

/** A new team organization with the caller as its owner; the session then switches to it. */
export default function NewOrgPage(_: PageProps) {
  const [name, setName] = useState('');
  const reset = useResetSession();
  const toast = useToast();
  const [, navigate] = useLocation();
  const create = useMutation({
    mutationFn: async () => {
      const org = await data(api.POST('/api/permissions/create-team-org', { body: { name: name.trim() } }));
      await call(api.POST('/api/auth/switch-org', { body: { orgId: org.id } }));
      return org;
    },
    onSuccess: async (org) => {
      await reset();
      toast(`Organization ${org.name} created; you are its owner`);
      navigate('/');
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!create.isPending) create.mutate();
  };
  return (
    <>
      <PageHeader title="New organization" sub="A team organization: invite members, give them roles and per-project access." />
      <form className="card narrow" onSubmit={submit} noValidate>
        <Field label="Organization name" name="name" error={create.error}>
          {(p) => <Input {...p} value={name} onChange={(e) => setName(e.target.value)} maxLength={100} required autoFocus autoComplete="organization" />}
        </Field>
        {create.error && !errorNames(create.error, 'name') ? <ErrorNotice error={create.error} title="Could not create the organization" /> : null}
        <div className="row">
          <Button type="submit" variant="primary" busy={create.isPending}>
            Create organization
          </Button>
          <Link href="/" className="btn btn-ghost">
            Cancel
          </Link>
        </div>
      </form>
    </>
  );
}
