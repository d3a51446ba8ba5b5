import { useEffect, type ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { ApiError } from '../../api/client';
import { useMe } from '../../session';
import { Centered } from '../../ui/layout';
import './auth.css';

/** `?next=` carried from one signed-out page to another (sign-in <-> sign-up), only for a path of this site. */
export function withNext(path: string): string {
  const next = new URLSearchParams(window.location.search).get('next');
  return next && next.startsWith('/') && !next.startsWith('//') ? `${path}?next=${encodeURIComponent(next)}` : path;
}

/** A signed-out page in the centered frame; a visitor who is already signed in goes on to `to`. */
export function SignedOutPage({ title, to, children }: { title: string; to: string; children: ReactNode }) {
  const me = useMe();
  const [, navigate] = useLocation();
  useEffect(() => {
    if (me.data) navigate(to, { replace: true });
  }, [me.data, navigate, to]);
  return (
    <Centered>
      <h1 className="auth-title">{title}</h1>
      {children}
    </Centered>
  );
}

export function AuthSwitch({ children }: { children: ReactNode }) {
  return <p className="auth-switch muted">{children}</p>;
}

export function AuthLink({ href, children }: { href: string; children: ReactNode }) {
  return <Link href={href}>{children}</Link>;
}

/** Is this the API's "sign-up is not allowed here" answer (contract section 10)? */
export function isSignupRefusal(err: unknown): err is ApiError {
  return err instanceof ApiError && err.code === 'SIGNUP_CLOSED';
}
