import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useLocation } from 'wouter';
import type { PageProps } from '../../app';
import { api, call } from '../../api/client';
import { nextPath, useResetSession } from '../../session';
import { Button, ErrorNotice, Field, Input } from '../../ui/controls';
import { AuthLink, AuthSwitch, isSignupRefusal, SignedOutPage, withNext } from './common';

/**
 * Sign-up where the instance allows it (contract section 10: BERTH_SIGNUP open, invite, closed, or
 * the first account then invite). No public route tells the mode, so the form is always offered and
 * the API's refusal (403 SIGNUP_CLOSED) is shown for what it is: closed, or by invitation only.
 */
export default function SignupPage(_: PageProps) {
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const reset = useResetSession();
  const [, navigate] = useLocation();
  const signup = useMutation({
    mutationFn: () => call(api.POST('/api/auth/signup', { body: { email, password, ...(name.trim() ? { name: name.trim() } : {}) } })),
    onSuccess: async () => {
      const to = nextPath();
      await reset();
      navigate(to, { replace: true });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!signup.isPending) signup.mutate();
  };
  return (
    <SignedOutPage title="Create an account" to={nextPath()}>
      <form className="auth-form" onSubmit={submit} noValidate>
        <Field label="Name (optional)" name="name" error={signup.error}>
          {(p) => <Input {...p} autoComplete="name" value={name} onChange={(e) => setName(e.target.value)} maxLength={100} autoFocus />}
        </Field>
        <Field label="Email" name="email" error={signup.error} hint="If you were invited, use the address the invitation was sent to.">
          {(p) => <Input {...p} type="email" autoComplete="email" value={email} onChange={(e) => setEmail(e.target.value)} required />}
        </Field>
        <Field label="Password" name="password" error={signup.error} hint="At least 8 characters.">
          {(p) => <Input {...p} type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} required />}
        </Field>
        {isSignupRefusal(signup.error) ? <SignupRefused message={signup.error.message} /> : <ErrorNotice error={signup.error} fields={['email', 'password', 'name']} title="Could not create the account" />}
        <Button type="submit" variant="primary" busy={signup.isPending}>
          Create account
        </Button>
      </form>
      <AuthSwitch>
        Already have an account? <AuthLink href={withNext('/login')}>Sign in</AuthLink>
      </AuthSwitch>
    </SignedOutPage>
  );
}

/** The instance refused the sign-up: by invitation only, or closed (the API's message says which). */
function SignupRefused({ message }: { message: string }) {
  const byInvitation = /invitation/i.test(message);
  return (
    <div className="notice notice-error" role="alert">
      <strong>{byInvitation ? 'Sign-up here is by invitation only.' : 'Sign-up is closed on this instance.'}</strong> {message}
    </div>
  );
}
