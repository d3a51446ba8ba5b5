import { lazy, Suspense, type ComponentType, type LazyExoticComponent } from 'react';
import { Route, Switch } from 'wouter';
import { ErrorBoundary } from './ui/error-boundary';
import { Spinner } from './ui/controls';
import { Centered, Shell } from './ui/layout';
import { RequireSession } from './session';
import { ProjectShell } from './pages/project/shell';

/** What every page receives: the route's parameters (`:id` -> params.id). */
export interface PageProps {
  params: Record<string, string>;
}
type Page = LazyExoticComponent<ComponentType<PageProps>>;

// Pages load on first visit, so the first page costs only its own code.
const pages = {
  login: lazy(() => import('./pages/auth/login')),
  signup: lazy(() => import('./pages/auth/signup')),
  invite: lazy(() => import('./pages/auth/invite')),
  projects: lazy(() => import('./pages/projects/list')),
  newProject: lazy(() => import('./pages/projects/new')),
  overview: lazy(() => import('./pages/project/overview')),
  deployments: lazy(() => import('./pages/project/deployments')),
  deployment: lazy(() => import('./pages/project/deployment')),
  previews: lazy(() => import('./pages/project/previews')),
  logs: lazy(() => import('./pages/project/logs')),
  requests: lazy(() => import('./pages/project/requests')),
  metrics: lazy(() => import('./pages/project/metrics')),
  env: lazy(() => import('./pages/project/env')),
  domains: lazy(() => import('./pages/project/domains')),
  rules: lazy(() => import('./pages/project/rules')),
  settings: lazy(() => import('./pages/project/settings')),
  services: lazy(() => import('./pages/services/services')),
  service: lazy(() => import('./pages/services/service')),
  projectBackups: lazy(() => import('./pages/backups/project-backups')),
  restore: lazy(() => import('./pages/backups/restore')),
  destinations: lazy(() => import('./pages/backups/destinations')),
  members: lazy(() => import('./pages/org/members')),
  invitations: lazy(() => import('./pages/org/invitations')),
  grants: lazy(() => import('./pages/org/grants')),
  audit: lazy(() => import('./pages/org/audit')),
  newOrg: lazy(() => import('./pages/org/new-org')),
  tokens: lazy(() => import('./pages/org/tokens')),
  notifications: lazy(() => import('./pages/org/notifications')),
  notFound: lazy(() => import('./pages/not-found')),
} satisfies Record<string, Page>;

/** Every page of the dashboard: path -> page, and the frame it is shown in. */
export const ROUTES: Array<{ path: string; page: Page; frame: 'public' | 'shell' | 'project' }> = [
  { path: '/login', page: pages.login, frame: 'public' },
  { path: '/signup', page: pages.signup, frame: 'public' },
  { path: '/invite/:id', page: pages.invite, frame: 'public' },
  { path: '/', page: pages.projects, frame: 'shell' },
  { path: '/new', page: pages.newProject, frame: 'shell' },
  { path: '/projects/:id', page: pages.overview, frame: 'project' },
  { path: '/projects/:id/deployments', page: pages.deployments, frame: 'project' },
  { path: '/projects/:id/deployments/:deploymentId', page: pages.deployment, frame: 'project' },
  { path: '/projects/:id/logs', page: pages.logs, frame: 'project' },
  { path: '/projects/:id/requests', page: pages.requests, frame: 'project' },
  { path: '/projects/:id/metrics', page: pages.metrics, frame: 'project' },
  { path: '/projects/:id/env', page: pages.env, frame: 'project' },
  { path: '/projects/:id/domains', page: pages.domains, frame: 'project' },
  { path: '/projects/:id/rules', page: pages.rules, frame: 'project' },
  { path: '/projects/:id/previews', page: pages.previews, frame: 'project' },
  { path: '/projects/:id/settings', page: pages.settings, frame: 'project' },
  { path: '/projects/:id/services', page: pages.services, frame: 'project' },
  { path: '/projects/:id/services/:sid', page: pages.service, frame: 'project' },
  { path: '/projects/:id/backups', page: pages.projectBackups, frame: 'project' },
  { path: '/projects/:id/backups/restores/:restoreId', page: pages.restore, frame: 'project' },
  { path: '/backups/destinations', page: pages.destinations, frame: 'shell' },
  { path: '/org/members', page: pages.members, frame: 'shell' },
  { path: '/org/invitations', page: pages.invitations, frame: 'shell' },
  { path: '/org/grants', page: pages.grants, frame: 'shell' },
  { path: '/org/audit', page: pages.audit, frame: 'shell' },
  { path: '/org/notifications', page: pages.notifications, frame: 'shell' },
  { path: '/org/new', page: pages.newOrg, frame: 'shell' },
  { path: '/account/tokens', page: pages.tokens, frame: 'shell' },
];

function Framed({ route, params }: { route: (typeof ROUTES)[number]; params: Record<string, string> }) {
  const Page = route.page;
  const body = (
    <ErrorBoundary>
      <Suspense fallback={<Spinner />}>
        <Page params={params} />
      </Suspense>
    </ErrorBoundary>
  );
  if (route.frame === 'public') return body;
  return (
    <RequireSession>
      <Shell>{route.frame === 'project' ? <ProjectShell id={params.id!}>{body}</ProjectShell> : body}</Shell>
    </RequireSession>
  );
}

export function App() {
  return (
    <Switch>
      {ROUTES.map((r) => (
        <Route key={r.path} path={r.path}>
          {(params) => <Framed route={r} params={params as Record<string, string>} />}
        </Route>
      ))}
      <Route>
        <Centered>
          <Suspense fallback={<Spinner />}>
            <pages.notFound params={{}} />
          </Suspense>
        </Centered>
      </Route>
    </Switch>
  );
}
