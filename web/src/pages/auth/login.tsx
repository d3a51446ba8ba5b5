import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useLocation } from 'wouter';
import type { PageProps } from '../../app';
import { api, call } from '../../api/client';
import { nextPath, useResetSession } from '../../session';
import { Button, ErrorNotice, Field, Input } from '../../ui/controls';
import { AuthLink, AuthSwitch, SignedOutPage, withNext } from './common';

/** Sign in with email and password (the session cookie); then on to `?next=` or the projects. */
export default function LoginPage(_: PageProps) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const reset = useResetSession();
  const [, navigate] = useLocation();
  const login = useMutation({
    mutationFn: () => call(api.POST('/api/auth/login', { body: { email, password } })),
    onSuccess: async () => {
      const to = nextPath();
      await reset();
      navigate(to, { replace: true });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!login.isPending) login.mutate();
  };
  return (
    <SignedOutPage title="Sign in" to={nextPath()}>
      <form className="auth-form" onSubmit={submit} noValidate>
        <Field label="Email" name="email" error={login.error}>
          {(p) => <Input {...p} type="email" autoComplete="username" value={email} onChange={(e) => setEmail(e.target.value)} required autoFocus />}
        </Field>
        <Field label="Password" name="password" error={login.error}>
          {(p) => <Input {...p} type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />}
        </Field>
        <ErrorNotice error={login.error} fields={['email', 'password']} title="Could not sign in" />
        <Button type="submit" variant="primary" busy={login.isPending}>
          Sign in
        </Button>
      </form>
      <AuthSwitch>
        No account yet? <AuthLink href={withNext('/signup')}>Create an account</AuthLink>
      </AuthSwitch>
    </SignedOutPage>
  );
}
