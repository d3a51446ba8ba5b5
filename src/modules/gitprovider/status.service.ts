import type { Actor } from '../../authz/actor.js';
import { can } from '../../authz/authorize.js';
import type { AppContext } from '../../context.js';
import { cloudGithubUnreachable } from '../cloud/index.js';
import { canSeeAccount } from './access.js';
import * as gh from './github.js';
import type { Account, Repo, Status } from './gitprovider.presenters.js';
import { listRepos } from './repos.service.js';
import { orgSources, type OrgSources } from './sources.js';
import { signState } from './state.js';

/** What the org has connected, as the caller may see it: status, home, and the host's gh CLI. */

/** The App's install page, with a signed state that binds the installation to the caller's org; null without an App. */
export function installUrl(ctx: AppContext, actor: Actor): string | null {
  const g = ctx.config.github;
  if (!gh.appConfigured(ctx) || !g.appSlug) return null;
  return `${g.webUrl}/apps/${encodeURIComponent(g.appSlug)}/installations/new?state=${encodeURIComponent(signState(ctx, actor, 'install'))}`;
}

async function accountsOf(ctx: AppContext, s: OrgSources, checkCli: boolean): Promise<Account[]> {
  const out: Account[] = s.installations.map((i) => ({ login: i.accountLogin, type: i.accountType, source: 'app' as const, installationId: i.installationId }));
  if (s.oauth) out.push({ login: s.oauth.login, type: s.oauth.accountType, source: 'oauth' });
  if (s.cli && (!checkCli || (await gh.ghToken(ctx)))) out.push({ login: s.cli.login, type: s.cli.accountType, source: 'cli' });
  return out;
}

export async function status(ctx: AppContext, actor: Actor): Promise<Status> {
  const s = await orgSources(ctx, actor.orgId);
  const all = await accountsOf(ctx, s, true);
  return {
    state: all.length > 0 ? 'connected' : 'not_connected',
    accounts: all.filter((a) => canSeeAccount(actor, a)),
    installUrl: can(actor, 'gitprovider:write') ? installUrl(ctx, actor) : null,
    cloudUnreachable: await cloudGithubUnreachable(ctx),
  };
}

export async function home(ctx: AppContext, actor: Actor): Promise<{ state: Status['state']; accounts: Account[]; repos: Repo[] }> {
  const st = await status(ctx, actor);
  const repos = st.state === 'connected' ? await listRepos(ctx, actor, {}) : [];
  return { state: st.state, accounts: st.accounts, repos };
}

export async function localStatus(ctx: AppContext): Promise<{ installed: boolean; authenticated: boolean; login: string | null; hostname: string }> {
  const token = await gh.ghToken(ctx);
  if (!token) return { installed: await ghInstalled(ctx), authenticated: false, login: null, hostname: gh.ghHostname(ctx) };
  let login: string | null = null;
  try {
    login = (await (await gh.octokitFor(ctx, token)).request('GET /user')).data.login;
  } catch {
    login = null;
  }
  return { installed: true, authenticated: login !== null, login, hostname: gh.ghHostname(ctx) };
}

async function ghInstalled(ctx: AppContext): Promise<boolean> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    try {
      const c = spawn(ctx.config.ghBin, ['--version'], { stdio: 'ignore' });
      const t = setTimeout(() => c.kill('SIGKILL'), 5000);
      c.on('error', () => (clearTimeout(t), resolve(false)));
      c.on('close', (code) => (clearTimeout(t), resolve(code === 0)));
    } catch {
      resolve(false);
    }
  });
}
