import { useMutation, useQuery, type UseQueryResult } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import type { PageProps } from '../../app';
import { api, ApiError, call, data, messageOf } from '../../api/client';
import { useMe, useResetSession } from '../../session';
import { Button, ConfirmDialog, Notice, Spinner } from '../../ui/controls';
import { Centered } from '../../ui/layout';
import { useToast } from '../../ui/toast';
import './auth.css';

/**
 * The invitation link `/invite/:id`. Signed out: what it is and the way in (sign-in or sign-up,
 * both coming back here). Signed in: one button accepts it and materializes its pending grants
 * (both authorized by the invitation itself, whatever the active org), switches the session to the
 * invitation's org and goes to its projects; or decline it.
 */
export default function InvitePage({ params }: PageProps) {
  const id = params.id!;
  const me = useMe();
  // Who invites you where (public: the link's id is its secret), shown signed in or out.
  const summary = useQuery({
    queryKey: ['invitation-summary', id],
    queryFn: () => fetchSummary(id),
    retry: false,
  });
  // After signing out here the page must render again to see the new (signed-out) session: the
  // session reset replaces the cached `me` query, which only a render picks up.
  const [, rerender] = useState(0);
  const here = `/invite/${encodeURIComponent(id)}`;
  return (
    <Centered>
      <h1 className="auth-title">You are invited</h1>
      <Summary summary={summary} />
      {me.isPending ? <Spinner /> : me.data ? <SignedIn id={id} email={me.data.user.email} onSignedOut={() => rerender((n) => n + 1)} /> : <SignedOut here={here} />}
    </Centered>
  );
}

const fetchSummary = (id: string) => data(api.GET('/api/permissions/invitations/{id}/summary', { params: { path: { id } } }));
type InvitationSummary = Awaited<ReturnType<typeof fetchSummary>>;

/** "<inviter> invited you to join <org> as <role>", and what became of the invitation when it is no longer open. */
function Summary({ summary }: { summary: UseQueryResult<InvitationSummary> }) {
  if (summary.isPending) return null;
  if (summary.error) {
    const missing = summary.error instanceof ApiError && summary.error.status === 404;
    return <Notice kind="warn">{missing ? 'This invitation does not exist: the link may be mistyped, or the invitation was withdrawn.' : `The invitation could not be looked up: ${messageOf(summary.error)}`}</Notice>;
  }
  const s = summary.data;
  const who = s.invitedBy ? (s.invitedBy.name ? `${s.invitedBy.name} (${s.invitedBy.email})` : s.invitedBy.email) : 'Someone';
  const closed: Record<string, string> = {
    expired: 'It has expired: ask whoever invited you to resend it.',
    accepted: 'It has already been accepted.',
    declined: 'It was declined.',
    cancelled: 'It was withdrawn.',
  };
  return (
    <>
      <p className="auth-lead invite-summary">
        <strong>{who}</strong> invited you to join <strong>{s.orgName}</strong> on Berth as {s.role === 'admin' ? 'an' : 'a'} {s.role}.
      </p>
      {closed[s.status] ? <Notice kind="warn">{closed[s.status]}</Notice> : null}
    </>
  );
}

function SignedOut({ here }: { here: string }) {
  const next = `?next=${encodeURIComponent(here)}`;
  return (
    <>
      <p className="auth-lead">
        Sign in, or create an account, <strong>with the email address the invitation was sent to</strong>; you will come back here to accept it.
      </p>
      <div className="auth-actions">
        <Link href={`/login${next}`} className="btn btn-primary">
          Sign in to accept
        </Link>
        <Link href={`/signup${next}`} className="btn">
          Create an account
        </Link>
      </div>
    </>
  );
}

/** The API's refusal in plain words: which case it is, then the server's own sentence. */
function explain(err: unknown): { title: string; detail: string } {
  const detail = messageOf(err);
  if (!(err instanceof ApiError)) return { title: 'Something went wrong', detail };
  if (err.status === 404) return { title: 'This invitation does not exist', detail: 'The link may be mistyped, or the invitation was withdrawn.' };
  if (err.status === 403) return { title: 'This invitation is for another email address', detail: 'Sign in with the account of the address it was sent to.' };
  if (/expired/i.test(detail)) return { title: 'This invitation has expired', detail: 'Ask whoever invited you to resend it.' };
  if (err.status === 409) return { title: 'This invitation can no longer be accepted', detail };
  return { title: 'The invitation could not be accepted', detail };
}

function SignedIn({ id, email, onSignedOut }: { id: string; email: string; onSignedOut(): void }) {
  const reset = useResetSession();
  const toast = useToast();
  const [, navigate] = useLocation();
  const [confirmDecline, setConfirmDecline] = useState(false);
  const path = { params: { path: { id } } };

  // Accept, then materialize the pending grants, then make the invitation's org the active one.
  const accept = useMutation({
    mutationFn: async () => {
      const inv = await data(api.POST('/api/permissions/invitations/{id}/accept', path));
      const out = await data(api.POST('/api/permissions/invitations/{id}/materialize', path));
      await call(api.POST('/api/auth/switch-org', { body: { orgId: inv.orgId } }));
      return { inv, materialized: out.materialized };
    },
    onSuccess: async ({ inv, materialized }) => {
      await reset();
      toast(`You joined the organization as ${inv.role}${materialized ? ` with ${materialized} access grant${materialized === 1 ? '' : 's'}` : ''}.`);
      navigate('/', { replace: true });
    },
  });
  const decline = useMutation({
    mutationFn: () => data(api.POST('/api/permissions/invitations/{id}/decline', path)),
    onSuccess: () => setConfirmDecline(false),
  });
  const signOut = useMutation({
    mutationFn: () => call(api.POST('/api/auth/logout')),
    onSettled: async () => {
      await reset();
      onSignedOut();
    },
  });

  if (decline.isSuccess) {
    return (
      <>
        <Notice kind="ok">You declined the invitation.</Notice>
        <p>
          <Link href="/">Go to your projects</Link>
        </p>
      </>
    );
  }
  const failure = accept.error ? explain(accept.error) : null;
  return (
    <>
      <p className="auth-lead">
        You are signed in as <strong>{email}</strong>. Accepting joins the organization that invited this address, with the role and access it was given.
      </p>
      {failure ? (
        <div className="notice notice-error" role="alert">
          <strong>{failure.title}.</strong> {failure.detail}
        </div>
      ) : null}
      <div className="auth-actions">
        <Button variant="primary" busy={accept.isPending} disabled={decline.isPending} onClick={() => accept.mutate()}>
          Accept invitation
        </Button>
        <Button onClick={() => setConfirmDecline(true)} disabled={accept.isPending}>
          Decline
        </Button>
      </div>
      {accept.error instanceof ApiError && accept.error.status === 403 ? (
        <p className="auth-switch">
          <Button variant="ghost" busy={signOut.isPending} onClick={() => signOut.mutate()}>
            Sign out and use another account
          </Button>
        </p>
      ) : null}
      <p className="auth-switch muted">
        <Link href="/">Not now: go to your projects</Link>
      </p>
      <ConfirmDialog
        open={confirmDecline}
        title="Decline the invitation?"
        confirmLabel="Decline invitation"
        busy={decline.isPending}
        error={decline.error ? `${explain(decline.error).title}. ${explain(decline.error).detail}` : undefined}
        onConfirm={() => decline.mutate()}
        onCancel={() => {
          decline.reset();
          setConfirmDecline(false);
        }}
      >
        <p>The invitation will be closed and the access it offers dropped. To join later, you would need a new invitation.</p>
      </ConfirmDialog>
    </>
  );
}
