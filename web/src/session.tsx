import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, type ReactNode } from 'react';
import { useLocation } from 'wouter';
import { api, ApiError, data } from './api/client';
import { Spinner, ErrorNotice } from './ui/controls';

export type Me = Awaited<ReturnType<typeof fetchMe>>;

export function fetchMe() {
  return data(api.GET('/api/auth/me'));
}

/** The signed-in account, its active org and its orgs (null while signed out). */
export function useMe() {
  return useQuery({
    queryKey: ['me'],
    queryFn: async () => {
      try {
        return await fetchMe();
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return null;
        throw err;
      }
    },
    staleTime: 30_000,
  });
}

/** The signed-in account, for pages under RequireSession (never null there). */
export function useSession(): NonNullable<Me> {
  const me = useMe().data;
  if (!me) throw new Error('useSession outside RequireSession');
  return me;
}

/** Sends a signed-out visitor to /login?next=<where they were going>. */
export function RequireSession({ children }: { children: ReactNode }) {
  const me = useMe();
  const [location, navigate] = useLocation();
  useEffect(() => {
    if (me.data === null) navigate(`/login?next=${encodeURIComponent(location + window.location.search)}`, { replace: true });
  }, [me.data, location, navigate]);
  if (me.isPending) return <Spinner />;
  if (me.error) return <ErrorNotice error={me.error} title="Could not load your account" />;
  if (!me.data) return null;
  return <>{children}</>;
}

/**
 * After sign-in, sign-out or an org switch everything cached belongs to someone else: every query
 * goes back to its initial state (no data), and those on screen fetch again, `me` first among them,
 * so the frame waits for the new session and no page shows the old org's data for a moment.
 */
export function useResetSession() {
  const qc = useQueryClient();
  return async () => {
    await qc.cancelQueries();
    qc.removeQueries({ predicate: (q) => q.getObserversCount() === 0 });
    await qc.resetQueries();
  };
}

/** Where to go after signing in: the `next` parameter when it is a path of this site, else home. */
export function nextPath(): string {
  const next = new URLSearchParams(window.location.search).get('next');
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/';
}
