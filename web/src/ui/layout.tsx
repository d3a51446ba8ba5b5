import { useMutation } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { accessOf, type Access } from '../access';
import { api, call, messageOf } from '../api/client';
import { useResetSession, useSession } from '../session';
import { applyTheme, storedTheme, type Theme } from './theme';
import { useToast } from './toast';

/** The navigation; `shown` leaves out the pages whose every action the member's access refuses. */
const NAV: Array<{ href: string; label: string; match: RegExp; shown?: (a: Access) => boolean }> = [
  { href: '/', label: 'Projects', match: /^\/($|projects|new)/ },
  { href: '/backups/destinations', label: 'Backup destinations', match: /^\/backups/, shown: (a) => a.backupDestinations },
  { href: '/org/members', label: 'Members', match: /^\/org\/members/, shown: (a) => a.manageOrg },
  { href: '/org/invitations', label: 'Invitations', match: /^\/org\/invitations/, shown: (a) => a.manageOrg },
  { href: '/org/grants', label: 'Grants', match: /^\/org\/grants/, shown: (a) => a.manageOrg },
  { href: '/org/notifications', label: 'Notifications', match: /^\/org\/notifications/, shown: (a) => a.manageOrg },
  { href: '/org/audit', label: 'Audit log', match: /^\/org\/audit/, shown: (a) => a.audit },
  { href: '/account/tokens', label: 'Access tokens', match: /^\/account/ },
];

/** The org switcher: the session's active org, among the orgs the account belongs to. */
function OrgSwitcher() {
  const me = useSession();
  const reset = useResetSession();
  const toast = useToast();
  const [, navigate] = useLocation();
  const switchOrg = useMutation({
    mutationFn: (orgId: string) => call(api.POST('/api/auth/switch-org', { body: { orgId } })),
    onSuccess: async () => {
      await reset();
      navigate('/');
    },
    onError: (err) => toast(messageOf(err), 'error'),
  });
  return (
    <label className="org-switcher">
      <span className="sr-only">Organization</span>
      <select className="input" value={me.org?.id ?? ''} disabled={switchOrg.isPending} onChange={(e) => switchOrg.mutate(e.target.value)} aria-label="Organization">
        {me.orgs.map((o) => (
          <option key={o.id} value={o.id}>
            {o.name} ({o.role})
          </option>
        ))}
      </select>
    </label>
  );
}

function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(storedTheme());
  const next: Record<Theme, Theme> = { system: 'light', light: 'dark', dark: 'system' };
  return (
    <button
      type="button"
      className="btn btn-ghost btn-small"
      aria-label={`Theme: ${theme}. Switch to ${next[theme]}`}
      title={`Theme: ${theme}`}
      onClick={() => {
        applyTheme(next[theme]);
        setTheme(next[theme]);
      }}
    >
      {theme === 'dark' ? '☾' : theme === 'light' ? '☀' : '◐'}
    </button>
  );
}

/** The signed-in frame: header (brand, org switcher, account), the navigation, the page. */
export function Shell({ children }: { children: ReactNode }) {
  const me = useSession();
  const access = accessOf(me);
  const [location, navigate] = useLocation();
  const reset = useResetSession();
  const [menuOpen, setMenuOpen] = useState(false);
  const logout = useMutation({
    mutationFn: () => call(api.POST('/api/auth/logout')),
    onSettled: async () => {
      await reset();
      navigate('/login');
    },
  });
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/" className="brand">
          Berth
        </Link>
        <OrgSwitcher />
        <div className="topbar-end">
          <ThemeToggle />
          <span className="muted topbar-user" title={me.user.email}>
            {me.user.name || me.user.email}
          </span>
          <button type="button" className="btn btn-ghost btn-small" onClick={() => logout.mutate()} disabled={logout.isPending}>
            Sign out
          </button>
          <button type="button" className="btn btn-ghost btn-small nav-toggle" aria-expanded={menuOpen} aria-controls="sidenav" onClick={() => setMenuOpen((o) => !o)}>
            Menu
          </button>
        </div>
      </header>
      <div className="frame">
        <nav id="sidenav" className={`sidenav${menuOpen ? ' open' : ''}`} aria-label="Main">
          {NAV.filter((n) => !n.shown || n.shown(access)).map((n) => (
            <Link key={n.href} href={n.href} className={n.match.test(location) ? 'active' : ''} aria-current={n.match.test(location) ? 'page' : undefined} onClick={() => setMenuOpen(false)}>
              {n.label}
            </Link>
          ))}
          {/* A page of its own (not the dashboard's router): Redoc renders /api/openapi.json there. */}
          <a href="/api/docs" className="sidenav-foot">
            API reference
          </a>
        </nav>
        <main id="main" className="content" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  );
}

/** A page's title row: the heading and its actions. */
export function PageHeader({ title, children, sub }: { title: ReactNode; sub?: ReactNode; children?: ReactNode }) {
  return (
    <div className="page-header">
      <div>
        <h1>{title}</h1>
        {sub ? <p className="muted">{sub}</p> : null}
      </div>
      {children ? <div className="page-actions">{children}</div> : null}
    </div>
  );
}

/** The frame of signed-out pages (sign-in, sign-up, an invitation). */
export function Centered({ children }: { children: ReactNode }) {
  return (
    <main id="main" className="centered">
      <div className="brand brand-large">Berth</div>
      <div className="card narrow">{children}</div>
    </main>
  );
}
