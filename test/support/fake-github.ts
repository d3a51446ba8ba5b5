/**
 * A fake GitHub for tests: node:http on 127.0.0.1, GitHub's documented JSON shapes and Link-header
 * pagination, RS256 App-JWT verification with the App's public key, expiring installation tokens,
 * OAuth code and device flows, contents in base64, hooks, repositories backed by real bare git
 * repositories, and git over smart HTTP through /usr/lib/git-core/git-http-backend that accepts
 * only a valid installation token (Basic `x-access-token:<token>`).
 *
 * Web base: `url`; REST base: `apiUrl` = `url + '/api/v3'` (the GitHub Enterprise Server layout, so
 * the path prefix of BERTH_GITHUB_API_URL is exercised).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHmac, createPublicKey, createVerify, generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const GIT_HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

export interface FakeAccount {
  id: number;
  login: string;
  type: 'User' | 'Organization';
}

export interface FakeInstallation {
  id: number;
  account: FakeAccount;
  /** null: all repositories of the account; else only these names. */
  repositories: string[] | null;
  suspended: boolean;
}

export interface FakeRepo {
  id: number;
  owner: FakeAccount;
  name: string;
  private: boolean;
  defaultBranch: string;
  hooks: FakeHook[];
}

export interface FakeHook {
  id: number;
  name: string;
  active: boolean;
  events: string[];
  config: { url: string; content_type: string; secret?: string; insecure_ssl: string };
  created_at: string;
  updated_at: string;
}

export interface FakePull {
  number: number;
  /** The head repository (`owner/name`): the base repository itself, or a fork. */
  headOwner: string;
  headRepo: string;
  head: string;
  base: string;
  state: 'open' | 'closed';
  merged: boolean;
}

export interface FakeStatus {
  owner: string;
  repo: string;
  sha: string;
  state: string;
  target_url: string | null;
  description: string | null;
  context: string;
  auth: Auth['kind'];
  at: string;
}

export interface FakeComment {
  id: number;
  owner: string;
  repo: string;
  number: number;
  body: string;
  created_at: string;
  updated_at: string;
  /** How many times it was edited. */
  edits: number;
}

interface InstToken {
  installationId: number;
  expiresAt: number;
  repositories?: string[];
}

interface DeviceCode {
  deviceCode: string;
  userCode: string;
  clientId: string;
  state: 'pending' | 'approved' | 'denied';
  login?: string;
  expiresAt: number;
  interval: number;
}

export type Auth = { kind: 'app' } | { kind: 'installation'; token: InstToken; raw: string } | { kind: 'user'; login: string } | { kind: 'none' } | { kind: 'bad' };

export interface FakeGithubOptions {
  appId: string;
  /** The App's public key (PEM or KeyObject): App JWTs are verified with it. */
  publicKey: string | KeyObject;
  clientId?: string;
  clientSecret?: string;
  /** Lifetime of installation tokens (GitHub: one hour). */
  tokenTtlMs?: number;
}

function git(args: string[], opts: { cwd?: string; input?: string | Buffer } = {}): string {
  return execFileSync('git', args, {
    cwd: opts.cwd,
    input: opts.input,
    env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', HOME: os.tmpdir() },
    stdio: ['pipe', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  }).toString('utf8');
}

export class FakeGithub {
  readonly root: string;
  private server: http.Server | null = null;
  url = '';
  apiUrl = '';
  private nextId = 1000;
  readonly accounts = new Map<string, FakeAccount>();
  readonly orgMembers = new Map<string, Set<string>>();
  readonly installations = new Map<number, FakeInstallation>();
  readonly repos = new Map<string, FakeRepo>();
  private instTokens = new Map<string, InstToken>();
  private userTokens = new Map<string, string>();
  private oauthCodes = new Map<string, string>();
  private deviceCodes = new Map<string, DeviceCode>();
  private publicKey: KeyObject;
  /** Every API request: method, path (without the /api/v3 prefix) and credential kind. */
  readonly log: { method: string; path: string; auth: Auth['kind'] }[] = [];
  /** Tokens minted: count per installation. */
  readonly minted = new Map<number, number>();
  /** Where the App's "Setup URL" points (GitHub redirects there after an install). */
  setupUrl = '';
  /** The signed-in browser user for /login/oauth/authorize and the install page. */
  browserUser: string | null = null;
  /** What the next visit of the install page installs on. */
  nextInstallAccount: string | null = null;
  tokenTtlMs: number;
  /** GitHub caps per_page at 100; tests lower it to exercise Link-header pagination. */
  maxPerPage = 100;
  /** Git smart-HTTP requests served, and those refused. */
  readonly gitRequests: { path: string; ok: boolean }[] = [];
  /** Pull requests by `owner/name` (lowercase), then number (`openPull`). */
  readonly pulls = new Map<string, Map<number, FakePull>>();
  /** Every commit status created (`POST /repos/:owner/:repo/statuses/:sha`), in order. */
  readonly statuses: FakeStatus[] = [];
  /** Issue comments by id (`POST .../issues/:number/comments`, `PATCH .../issues/comments/:id`). */
  readonly comments = new Map<number, FakeComment>();
  /** Every comment write, in order: `create` or `edit`, with the body sent. */
  readonly commentWrites: { op: 'create' | 'edit'; owner: string; repo: string; number: number; id: number; body: string; auth: Auth['kind'] }[] = [];
  /** Failures to answer instead of the real handling (`failNext`). */
  private failures: { method: string; path: RegExp; status: number; times: number }[] = [];

  constructor(readonly opts: FakeGithubOptions) {
    this.root = mkdtempSync(path.join(os.tmpdir(), 'fake-github-'));
    this.publicKey = typeof opts.publicKey === 'string' ? createPublicKey(opts.publicKey) : opts.publicKey;
    this.tokenTtlMs = opts.tokenTtlMs ?? 3600_000;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      this.handle(req, res).catch((e) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ message: String((e as Error)?.message ?? e) }));
        } else res.destroy();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const addr = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${addr.port}`;
    this.apiUrl = `${this.url}/api/v3`;
    return this;
  }

  async close(): Promise<void> {
    if (this.server) {
      this.server.closeAllConnections();
      await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    }
    rmSync(this.root, { recursive: true, force: true });
  }

  // ---------------------------------------------------------------- test setup

  account(login: string, type: 'User' | 'Organization' = 'User'): FakeAccount {
    const key = login.toLowerCase();
    let a = this.accounts.get(key);
    if (!a) {
      a = { id: this.nextId++, login, type };
      this.accounts.set(key, a);
    }
    return a;
  }

  addMember(org: string, login: string): void {
    const k = org.toLowerCase();
    if (!this.orgMembers.has(k)) this.orgMembers.set(k, new Set());
    this.orgMembers.get(k)!.add(login.toLowerCase());
  }

  /** Installs the App on an account (all its repositories, or only `repositories`). */
  install(login: string, opts: { type?: 'User' | 'Organization'; repositories?: string[] } = {}): FakeInstallation {
    const account = this.account(login, opts.type);
    const inst: FakeInstallation = { id: this.nextId++, account, repositories: opts.repositories ?? null, suspended: false };
    this.installations.set(inst.id, inst);
    return inst;
  }

  uninstall(id: number): void {
    this.installations.delete(id);
    for (const [t, v] of this.instTokens) if (v.installationId === id) this.instTokens.delete(t);
  }

  /** A user access token (as OAuth or `gh auth token` would give). */
  userToken(login: string): string {
    this.account(login);
    const t = `gho_${randomBytes(18).toString('hex')}`;
    this.userTokens.set(t, login.toLowerCase());
    return t;
  }

  /** An OAuth code GitHub would hand the browser after `login` authorized the app. */
  oauthCode(login: string): string {
    this.account(login);
    const c = randomBytes(10).toString('hex');
    this.oauthCodes.set(c, login.toLowerCase());
    return c;
  }

  /** The user entered `userCode` at the verification page and approved (or denied). */
  answerDevice(userCode: string, login: string | null): void {
    for (const d of this.deviceCodes.values()) {
      if (d.userCode === userCode) {
        d.state = login ? 'approved' : 'denied';
        d.login = login?.toLowerCase();
        if (login) this.account(login);
        return;
      }
    }
    throw new Error(`no device code with user code ${userCode}`);
  }

  expireDeviceCodes(): void {
    for (const d of this.deviceCodes.values()) d.expiresAt = 0;
  }

  /** Creates a repository backed by a bare git repository, with an initial commit of `files`. */
  createRepo(owner: string, name: string, opts: { files?: Record<string, string>; branch?: string; private?: boolean; type?: 'User' | 'Organization' } = {}): FakeRepo {
    const acc = this.account(owner, opts.type);
    const repo: FakeRepo = { id: this.nextId++, owner: acc, name, private: opts.private ?? true, defaultBranch: opts.branch ?? 'main', hooks: [] };
    this.repos.set(`${owner}/${name}`.toLowerCase(), repo);
    const bare = this.barePath(acc.login, name);
    mkdirSync(path.dirname(bare), { recursive: true });
    git(['init', '--bare', '--quiet', `--initial-branch=${repo.defaultBranch}`, bare]);
    if (opts.files) this.push(owner, name, opts.files, { branch: repo.defaultBranch, message: 'initial commit' });
    return repo;
  }

  /**
   * A repository under `owner` (named `name`, else as the source) with the same branches and commits
   * as `fromOwner/fromName`: its bare repository is copied on disk, so no git process runs (cheap
   * enough for each test to copy template repositories it then changes freely). Hooks are not copied.
   */
  copyRepo(fromOwner: string, fromName: string, owner: string, opts: { name?: string; type?: 'User' | 'Organization' } = {}): FakeRepo {
    const src = this.repo(fromOwner, fromName);
    if (!src) throw new Error(`no repo ${fromOwner}/${fromName}`);
    const acc = this.account(owner, opts.type);
    const repo: FakeRepo = { id: this.nextId++, owner: acc, name: opts.name ?? src.name, private: src.private, defaultBranch: src.defaultBranch, hooks: [] };
    if (this.repo(owner, repo.name)) throw new Error(`repo ${owner}/${repo.name} exists`);
    this.repos.set(`${owner}/${repo.name}`.toLowerCase(), repo);
    const bare = this.barePath(acc.login, repo.name);
    mkdirSync(path.dirname(bare), { recursive: true });
    cpSync(this.barePath(src.owner.login, src.name), bare, { recursive: true });
    return repo;
  }

  /** Commits `files` (path -> content) on `branch` and returns the new commit sha. */
  push(owner: string, name: string, files: Record<string, string>, opts: { branch?: string; message?: string } = {}): string {
    const repo = this.repo(owner, name);
    if (!repo) throw new Error(`no repo ${owner}/${name}`);
    const branch = opts.branch ?? repo.defaultBranch;
    const bare = this.barePath(repo.owner.login, repo.name);
    const work = mkdtempSync(path.join(os.tmpdir(), 'fake-github-work-'));
    try {
      git(['init', '--quiet', `--initial-branch=${branch}`, work]);
      const heads = git(['--git-dir', bare, 'for-each-ref', '--format=%(refname)', 'refs/heads']).split('\n').filter(Boolean);
      if (heads.includes(`refs/heads/${branch}`)) {
        git(['fetch', '--quiet', bare, `refs/heads/${branch}:refs/remotes/origin/${branch}`], { cwd: work });
        git(['reset', '--quiet', '--hard', `refs/remotes/origin/${branch}`], { cwd: work });
      } else if (heads.includes(`refs/heads/${repo.defaultBranch}`)) {
        git(['fetch', '--quiet', bare, `refs/heads/${repo.defaultBranch}:refs/remotes/origin/base`], { cwd: work });
        git(['reset', '--quiet', '--hard', 'refs/remotes/origin/base'], { cwd: work });
      }
      for (const [p, content] of Object.entries(files)) {
        const full = path.join(work, p);
        mkdirSync(path.dirname(full), { recursive: true });
        writeFileSync(full, content);
      }
      git(['add', '-A'], { cwd: work });
      git(['-c', 'user.name=Fake', '-c', 'user.email=fake@example.test', 'commit', '--quiet', '--allow-empty', '-m', opts.message ?? 'update'], { cwd: work });
      git(['push', '--quiet', bare, `HEAD:refs/heads/${branch}`], { cwd: work });
      return git(['rev-parse', 'HEAD'], { cwd: work }).trim();
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }

  repo(owner: string, name: string): FakeRepo | undefined {
    return this.repos.get(`${owner}/${name}`.toLowerCase());
  }

  headOf(owner: string, name: string, branch?: string): string {
    const repo = this.repo(owner, name)!;
    return git(['--git-dir', this.barePath(repo.owner.login, repo.name), 'rev-parse', `refs/heads/${branch ?? repo.defaultBranch}`]).trim();
  }

  private barePath(owner: string, name: string): string {
    return path.join(this.root, owner.toLowerCase(), `${name.toLowerCase()}.git`);
  }

  /** Sends a signed delivery the way GitHub does; answers status and parsed body. */
  async deliver(target: string, event: string, payload: unknown, opts: { secret?: string; deliveryId?: string; hookId?: number; signature?: string } = {}) {
    const body = Buffer.from(JSON.stringify(payload));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'GitHub-Hookshot/fake',
      'x-github-event': event,
      'x-github-delivery': opts.deliveryId ?? randomUUID(),
    };
    if (opts.hookId) headers['x-github-hook-id'] = String(opts.hookId);
    if (opts.signature !== undefined) headers['x-hub-signature-256'] = opts.signature;
    else if (opts.secret) headers['x-hub-signature-256'] = `sha256=${createHmac('sha256', opts.secret).update(body).digest('hex')}`;
    const res = await fetch(target, { method: 'POST', headers, body, signal: AbortSignal.timeout(10000) });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, body: json, deliveryId: headers['x-github-delivery']! };
  }

  /** A push payload as GitHub sends it for `owner/name` at the branch head. */
  pushPayload(owner: string, name: string, opts: { branch?: string; before?: string; installationId?: number } = {}) {
    const repo = this.repo(owner, name)!;
    const branch = opts.branch ?? repo.defaultBranch;
    const after = this.headOf(owner, name, branch);
    return {
      ref: `refs/heads/${branch}`,
      before: opts.before ?? '0000000000000000000000000000000000000000',
      after,
      created: false,
      deleted: false,
      forced: false,
      repository: this.repoJson(repo),
      pusher: { name: 'fake', email: 'fake@example.test' },
      sender: { login: repo.owner.login, id: repo.owner.id, type: 'User' },
      head_commit: { id: after, message: 'update', timestamp: new Date().toISOString() },
      ...(opts.installationId ? { installation: { id: opts.installationId, node_id: `I_${opts.installationId}` } } : {}),
    };
  }

  /**
   * Opens a pull request on `owner/name` from `head` (a branch of the repository itself, or with
   * `fork`, a branch of that fork's copy) into `base` (the default branch); answers its number.
   */
  openPull(owner: string, name: string, opts: { head: string; base?: string; fork?: { owner: string; name?: string } }): FakePull {
    const repo = this.repo(owner, name);
    if (!repo) throw new Error(`no repo ${owner}/${name}`);
    const key = `${owner}/${name}`.toLowerCase();
    if (!this.pulls.has(key)) this.pulls.set(key, new Map());
    const number = this.nextId++;
    const pull: FakePull = {
      number,
      headOwner: opts.fork ? this.account(opts.fork.owner).login : repo.owner.login,
      headRepo: opts.fork?.name ?? repo.name,
      head: opts.head,
      base: opts.base ?? repo.defaultBranch,
      state: 'open',
      merged: false,
    };
    this.pulls.get(key)!.set(number, pull);
    return pull;
  }

  pull(owner: string, name: string, number: number): FakePull | undefined {
    return this.pulls.get(`${owner}/${name}`.toLowerCase())?.get(number);
  }

  /**
   * A `pull_request` payload as GitHub sends it for pull `number` of `owner/name`, its head sha read
   * from the head repository's branch. `closed` closes the pull (with `merged` when asked).
   */
  pullRequestPayload(owner: string, name: string, number: number, action: 'opened' | 'synchronize' | 'reopened' | 'closed' | 'edited' | 'labeled', opts: { installationId?: number; merged?: boolean; before?: string } = {}) {
    const repo = this.repo(owner, name)!;
    const pull = this.pull(owner, name, number);
    if (!pull) throw new Error(`no pull ${owner}/${name}#${number}`);
    if (action === 'closed') {
      pull.state = 'closed';
      pull.merged = !!opts.merged;
    } else if (action === 'reopened') pull.state = 'open';
    const headRepo = this.repo(pull.headOwner, pull.headRepo);
    const sha = headRepo ? this.headOf(pull.headOwner, pull.headRepo, pull.head) : '0'.repeat(40);
    const fork = !!headRepo && headRepo !== repo;
    const headRepoJson = headRepo ? { ...this.repoJson(headRepo), fork } : null;
    return {
      action,
      number,
      ...(action === 'synchronize' ? { before: opts.before ?? '0'.repeat(40), after: sha } : {}),
      pull_request: {
        url: `${this.apiUrl}/repos/${repo.owner.login}/${repo.name}/pulls/${number}`,
        id: number * 10,
        number,
        html_url: `${this.url}/${repo.owner.login}/${repo.name}/pull/${number}`,
        state: pull.state,
        title: `Pull ${number}`,
        user: this.accountJson(this.account(pull.headOwner)),
        draft: false,
        merged: pull.merged,
        head: { label: `${pull.headOwner}:${pull.head}`, ref: pull.head, sha, user: this.accountJson(this.account(pull.headOwner)), repo: headRepoJson },
        base: { label: `${repo.owner.login}:${pull.base}`, ref: pull.base, sha: this.headOf(owner, name, pull.base), user: this.accountJson(repo.owner), repo: this.repoJson(repo) },
      },
      repository: this.repoJson(repo),
      sender: this.accountJson(this.account(pull.headOwner)),
      ...(opts.installationId ? { installation: { id: opts.installationId, node_id: `I_${opts.installationId}` } } : {}),
    };
  }

  /** Sends a signed `pull_request` delivery for pull `number` (see `pullRequestPayload`). */
  deliverPullRequest(target: string, secret: string, owner: string, name: string, number: number, action: Parameters<FakeGithub['pullRequestPayload']>[3], opts: { installationId?: number; merged?: boolean; deliveryId?: string; hookId?: number } = {}) {
    const payload = this.pullRequestPayload(owner, name, number, action, opts);
    return this.deliver(target, 'pull_request', payload, { secret, deliveryId: opts.deliveryId, hookId: opts.hookId });
  }

  /** The commit statuses created for `sha` (optionally in one context), oldest first. */
  statusesOf(sha: string, context?: string): FakeStatus[] {
    return this.statuses.filter((s) => s.sha === sha && (context === undefined || s.context === context));
  }

  /** The comments on issue or pull `number` of `owner/name`, oldest first. */
  commentsOn(owner: string, name: string, number: number): FakeComment[] {
    return [...this.comments.values()].filter((c) => c.owner.toLowerCase() === owner.toLowerCase() && c.repo.toLowerCase() === name.toLowerCase() && c.number === number).sort((a, b) => a.id - b.id);
  }

  /** How many injected failures (`failNext`) are still to be answered. */
  failuresLeft(): number {
    return this.failures.reduce((n, f) => n + f.times, 0);
  }

  /** Moves `branch` to `sha` (a fast-forward merge, or any branch update done outside `push`). */
  setBranch(owner: string, name: string, branch: string, sha: string): void {
    const repo = this.repo(owner, name);
    if (!repo) throw new Error(`no repo ${owner}/${name}`);
    git(['--git-dir', this.barePath(repo.owner.login, repo.name), 'update-ref', `refs/heads/${branch}`, sha]);
  }

  /** The next `times` API requests matching `method` and `path` (without /api/v3) answer `status` instead. */
  failNext(method: string, path: RegExp, status: number, times = 1): void {
    this.failures.push({ method, path, status, times });
  }

  // ---------------------------------------------------------------- JSON shapes

  private accountJson(a: FakeAccount) {
    return { login: a.login, id: a.id, node_id: `U_${a.id}`, type: a.type, site_admin: false, url: `${this.apiUrl}/users/${a.login}`, html_url: `${this.url}/${a.login}` };
  }

  repoJson(r: FakeRepo) {
    return {
      id: r.id,
      node_id: `R_${r.id}`,
      name: r.name,
      full_name: `${r.owner.login}/${r.name}`,
      private: r.private,
      owner: this.accountJson(r.owner),
      html_url: `${this.url}/${r.owner.login}/${r.name}`,
      description: null,
      fork: false,
      url: `${this.apiUrl}/repos/${r.owner.login}/${r.name}`,
      clone_url: `${this.url}/${r.owner.login}/${r.name}.git`,
      default_branch: r.defaultBranch,
      visibility: r.private ? 'private' : 'public',
      permissions: { admin: true, push: true, pull: true },
    };
  }

  private installationJson(i: FakeInstallation) {
    return {
      id: i.id,
      account: this.accountJson(i.account),
      app_id: Number(this.opts.appId),
      target_type: i.account.type,
      repository_selection: i.repositories ? 'selected' : 'all',
      permissions: { contents: 'write', metadata: 'read', administration: 'write', repository_hooks: 'write' },
      events: ['push'],
      suspended_at: i.suspended ? new Date().toISOString() : null,
    };
  }

  private hookJson(r: FakeRepo, h: FakeHook) {
    const { secret: _secret, ...config } = h.config;
    return {
      type: 'Repository',
      id: h.id,
      name: h.name,
      active: h.active,
      events: h.events,
      config: { ...config, ...(h.config.secret ? { secret: '********' } : {}) },
      updated_at: h.updated_at,
      created_at: h.created_at,
      url: `${this.apiUrl}/repos/${r.owner.login}/${r.name}/hooks/${h.id}`,
    };
  }

  /** The stored secret of a hook (tests check it equals BERTH_GITHUB_WEBHOOK_SECRET). */
  hookSecret(owner: string, name: string, id: number): string | undefined {
    return this.repo(owner, name)?.hooks.find((h) => h.id === id)?.config.secret;
  }

  // ---------------------------------------------------------------- HTTP

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', this.url);
    if (/^\/[^/]+\/[^/]+\.git\//.test(u.pathname)) return this.gitHttp(req, res, u);
    const body = await readBody(req);
    if (u.pathname.startsWith('/api/v3/') || u.pathname === '/api/v3') return this.api(req, res, u, u.pathname.slice('/api/v3'.length) || '/', body);
    return this.web(req, res, u, body);
  }

  private send(res: http.ServerResponse, status: number, data?: unknown, headers: Record<string, string> = {}): void {
    if (data === undefined) {
      res.writeHead(status, headers);
      res.end();
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify(data));
  }

  private paginate(res: http.ServerResponse, u: URL, items: unknown[], wrap?: (page: unknown[]) => unknown): void {
    const perPage = Math.min(this.maxPerPage, Math.max(1, Number(u.searchParams.get('per_page') ?? 30)));
    const page = Math.max(1, Number(u.searchParams.get('page') ?? 1));
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const slice = items.slice((page - 1) * perPage, page * perPage);
    const link = (p: number) => {
      const x = new URL(u.toString());
      x.searchParams.set('page', String(p));
      x.searchParams.set('per_page', String(perPage));
      return x.toString();
    };
    const parts: string[] = [];
    if (page < last) parts.push(`<${link(page + 1)}>; rel="next"`, `<${link(last)}>; rel="last"`);
    if (page > 1) parts.push(`<${link(1)}>; rel="first"`, `<${link(page - 1)}>; rel="prev"`);
    this.send(res, 200, wrap ? wrap(slice) : slice, parts.length ? { link: parts.join(', ') } : {});
  }

  private authOf(req: http.IncomingMessage): Auth {
    const h = req.headers.authorization;
    if (!h) return { kind: 'none' };
    const m = /^(bearer|token)\s+(\S+)$/i.exec(h);
    if (!m) return { kind: 'bad' };
    const t = m[2]!;
    if (t.split('.').length === 3) return this.verifyJwt(t) ? { kind: 'app' } : { kind: 'bad' };
    const it = this.instTokens.get(t);
    if (it) return it.expiresAt > Date.now() && this.installations.has(it.installationId) ? { kind: 'installation', token: it, raw: t } : { kind: 'bad' };
    const login = this.userTokens.get(t);
    if (login) return { kind: 'user', login };
    return { kind: 'bad' };
  }

  private verifyJwt(jwt: string): boolean {
    const [h, p, s] = jwt.split('.');
    try {
      const header = JSON.parse(Buffer.from(h!, 'base64url').toString('utf8'));
      if (header.alg !== 'RS256') return false;
      const v = createVerify('RSA-SHA256');
      v.update(`${h}.${p}`);
      if (!v.verify(this.publicKey, Buffer.from(s!, 'base64url'))) return false;
      const payload = JSON.parse(Buffer.from(p!, 'base64url').toString('utf8'));
      const now = Math.floor(Date.now() / 1000);
      if (String(payload.iss) !== String(this.opts.appId)) return false;
      if (typeof payload.exp !== 'number' || payload.exp <= now || payload.exp - payload.iat > 600) return false;
      if (typeof payload.iat !== 'number' || payload.iat > now + 60) return false;
      return true;
    } catch {
      return false;
    }
  }

  /** May this credential read (or administer) owner/name? */
  private canSee(auth: Auth, r: FakeRepo, write = false): boolean {
    if (auth.kind === 'installation') {
      const inst = this.installations.get(auth.token.installationId);
      if (!inst || inst.account.id !== r.owner.id) return false;
      if (inst.repositories && !inst.repositories.some((n) => n.toLowerCase() === r.name.toLowerCase())) return false;
      if (auth.token.repositories && !auth.token.repositories.some((n) => n.toLowerCase() === r.name.toLowerCase())) return false;
      if (write && auth.token.repositories) return false;
      return true;
    }
    if (auth.kind === 'user') {
      if (r.owner.login.toLowerCase() === auth.login) return true;
      if (this.orgMembers.get(r.owner.login.toLowerCase())?.has(auth.login)) return true;
      return !write && !r.private;
    }
    return false;
  }

  private reposVisibleTo(auth: Auth): FakeRepo[] {
    return [...this.repos.values()].filter((r) => this.canSee(auth, r)).sort((a, b) => a.id - b.id);
  }

  private async api(req: http.IncomingMessage, res: http.ServerResponse, u: URL, p: string, raw: Buffer): Promise<void> {
    const auth = this.authOf(req);
    this.log.push({ method: req.method!, path: p, auth: auth.kind });
    const failure = this.failures.find((f) => f.times > 0 && f.method === req.method && f.path.test(p));
    if (failure) {
      failure.times--;
      return this.send(res, failure.status, { message: 'Server Error (injected)' });
    }
    if (auth.kind === 'bad') return this.send(res, 401, { message: 'Bad credentials' });
    let body: any = {};
    if (raw.length) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return this.send(res, 400, { message: 'Problems parsing JSON' });
      }
    }
    const method = req.method!;
    const seg = p.split('/').filter(Boolean).map(decodeURIComponent);
    const notFound = () => this.send(res, 404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });
    const needAuth = () => this.send(res, 401, { message: 'Requires authentication' });

    // ---- App (JWT)
    if (seg[0] === 'app') {
      if (auth.kind !== 'app') return this.send(res, 401, { message: 'A JSON web token could not be decoded' });
      if (seg.length === 1 && method === 'GET') return this.send(res, 200, { id: Number(this.opts.appId), slug: 'berth-test', name: 'Berth Test' });
      if (seg[1] === 'installations' && seg.length === 2 && method === 'GET') return this.paginate(res, u, [...this.installations.values()].map((i) => this.installationJson(i)));
      const inst = this.installations.get(Number(seg[2]));
      if (seg[1] === 'installations' && seg.length === 3 && method === 'GET') return inst ? this.send(res, 200, this.installationJson(inst)) : notFound();
      if (seg[1] === 'installations' && seg[3] === 'access_tokens' && method === 'POST') {
        if (!inst) return notFound();
        if (inst.suspended) return this.send(res, 403, { message: 'This installation has been suspended' });
        let repositories: string[] | undefined;
        if (Array.isArray(body.repositories)) {
          repositories = body.repositories.map(String);
          for (const n of repositories!) {
            const r = this.repo(inst.account.login, n);
            if (!r || (inst.repositories && !inst.repositories.some((x) => x.toLowerCase() === n.toLowerCase()))) {
              return this.send(res, 422, { message: 'There is at least one repository that does not exist or is not accessible to the parent installation.' });
            }
          }
        }
        const token = `ghs_${randomBytes(18).toString('hex')}`;
        const expiresAt = Date.now() + this.tokenTtlMs;
        this.instTokens.set(token, { installationId: inst.id, expiresAt, repositories });
        this.minted.set(inst.id, (this.minted.get(inst.id) ?? 0) + 1);
        return this.send(res, 201, {
          token,
          expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
          permissions: body.permissions ?? { contents: 'write', metadata: 'read' },
          repository_selection: repositories ? 'selected' : inst.repositories ? 'selected' : 'all',
          ...(repositories ? { repositories: repositories.map((n) => this.repoJson(this.repo(inst.account.login, n)!)) } : {}),
        });
      }
      return notFound();
    }

    if (auth.kind === 'none') return needAuth();

    // ---- installation
    if (p === '/installation/repositories' && method === 'GET') {
      if (auth.kind !== 'installation') return this.send(res, 403, { message: 'Resource not accessible by integration' });
      const list = this.reposVisibleTo(auth).map((r) => this.repoJson(r));
      return this.paginate(res, u, list, (page) => ({ total_count: list.length, repository_selection: 'all', repositories: page }));
    }

    // ---- user
    if (seg[0] === 'user') {
      if (auth.kind !== 'user') return this.send(res, 403, { message: 'Resource not accessible by integration' });
      const me = this.accounts.get(auth.login)!;
      if (seg.length === 1 && method === 'GET') return this.send(res, 200, { ...this.accountJson(me), name: me.login });
      if (seg[1] === 'repos' && method === 'GET') {
        const mine = this.reposVisibleTo(auth).filter((r) => r.owner.id === me.id || this.orgMembers.get(r.owner.login.toLowerCase())?.has(auth.login));
        return this.paginate(res, u, mine.map((r) => this.repoJson(r)));
      }
      if (seg[1] === 'repos' && method === 'POST') return this.createRepoApi(res, me.login, body);
      if (seg[1] === 'installations' && method === 'GET') {
        const list = [...this.installations.values()].filter((i) => i.account.login.toLowerCase() === auth.login || this.orgMembers.get(i.account.login.toLowerCase())?.has(auth.login));
        return this.paginate(res, u, list.map((i) => this.installationJson(i)), (page) => ({ total_count: list.length, installations: page }));
      }
      return notFound();
    }

    // ---- org / user repository lists and creation
    if ((seg[0] === 'orgs' || seg[0] === 'users') && seg[2] === 'repos' && seg.length === 3) {
      const acc = this.accounts.get(seg[1]!.toLowerCase());
      if (!acc || (seg[0] === 'orgs' && acc.type !== 'Organization')) return notFound();
      if (method === 'GET') return this.paginate(res, u, this.reposVisibleTo(auth).filter((r) => r.owner.id === acc.id).map((r) => this.repoJson(r)));
      if (method === 'POST' && seg[0] === 'orgs') {
        const allowed =
          (auth.kind === 'user' && this.orgMembers.get(acc.login.toLowerCase())?.has(auth.login)) ||
          (auth.kind === 'installation' && this.installations.get(auth.token.installationId)?.account.id === acc.id && !auth.token.repositories);
        if (!allowed) return this.send(res, 403, { message: 'Resource not accessible' });
        return this.createRepoApi(res, acc.login, body, auth);
      }
      return notFound();
    }

    // ---- repositories
    if (seg[0] === 'repos' && seg.length >= 3) {
      const r = this.repo(seg[1]!, seg[2]!);
      if (!r || !this.canSee(auth, r)) return notFound();
      const rest = seg.slice(3);
      const bare = this.barePath(r.owner.login, r.name);
      if (rest.length === 0 && method === 'GET') return this.send(res, 200, this.repoJson(r));
      if (rest.length === 0 && method === 'DELETE') {
        if (!this.canSee(auth, r, true)) return this.send(res, 403, { message: 'Must have admin rights to Repository.' });
        this.repos.delete(`${r.owner.login}/${r.name}`.toLowerCase());
        rmSync(bare, { recursive: true, force: true });
        return this.send(res, 204);
      }
      if (rest[0] === 'branches' && method === 'GET') {
        const branches = this.branchesOf(bare);
        if (rest.length === 1) return this.paginate(res, u, branches.map((b) => this.branchJson(r, b)));
        const name = rest.slice(1).join('/');
        const b = branches.find((x) => x.name === name);
        return b ? this.send(res, 200, this.branchJson(r, b)) : this.send(res, 404, { message: 'Branch not found' });
      }
      if (rest[0] === 'contents' && method === 'GET') return this.contents(res, r, bare, rest.slice(1).join('/'), u.searchParams.get('ref') ?? r.defaultBranch);
      if (rest[0] === 'statuses' || rest[0] === 'issues' || (rest[0] === 'commits' && rest[2] === 'statuses')) return this.statusesAndComments(res, auth, r, bare, method, rest, body);
      if (rest[0] === 'hooks') {
        if (!this.canSee(auth, r, true)) return notFound();
        if (rest.length === 1 && method === 'GET') return this.paginate(res, u, r.hooks.map((h) => this.hookJson(r, h)));
        if (rest.length === 1 && method === 'POST') {
          if (!body.config?.url) return this.send(res, 422, { message: 'Validation Failed', errors: [{ resource: 'Hook', code: 'custom', message: 'url is missing' }] });
          if (r.hooks.some((h) => h.config.url === body.config.url)) {
            return this.send(res, 422, { message: 'Validation Failed', errors: [{ resource: 'Hook', code: 'custom', message: 'Hook already exists on this repository' }] });
          }
          const at = new Date().toISOString();
          const h: FakeHook = {
            id: this.nextId++,
            name: body.name ?? 'web',
            active: body.active ?? true,
            events: body.events ?? ['push'],
            config: { url: String(body.config.url), content_type: String(body.config.content_type ?? 'form'), secret: body.config.secret, insecure_ssl: String(body.config.insecure_ssl ?? '0') },
            created_at: at,
            updated_at: at,
          };
          r.hooks.push(h);
          return this.send(res, 201, this.hookJson(r, h));
        }
        const h = r.hooks.find((x) => x.id === Number(rest[1]));
        if (!h) return notFound();
        if (method === 'GET') return this.send(res, 200, this.hookJson(r, h));
        if (method === 'PATCH') {
          if (body.active !== undefined) h.active = !!body.active;
          if (Array.isArray(body.events)) h.events = body.events;
          if (Array.isArray(body.add_events)) h.events = [...new Set([...h.events, ...body.add_events])];
          if (body.config) h.config = { ...h.config, ...body.config };
          h.updated_at = new Date().toISOString();
          return this.send(res, 200, this.hookJson(r, h));
        }
        if (method === 'DELETE') {
          r.hooks = r.hooks.filter((x) => x !== h);
          return this.send(res, 204);
        }
      }
      return notFound();
    }
    return notFound();
  }

  /**
   * Commit statuses and issue comments: writes need a credential that may write the repository (an
   * installation token not narrowed to contents, or a member's user token), else 403.
   */
  private statusesAndComments(res: http.ServerResponse, auth: Auth, r: FakeRepo, bare: string, method: string, rest: string[], body: any): void {
    const notFound = () => this.send(res, 404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });
    const invalid = (message: string) => this.send(res, 422, { message: 'Validation Failed', errors: [{ resource: 'Status', code: 'custom', message }] });
    const mayWrite = () => this.canSee(auth, r, true);
    const owner = r.owner.login;
    // POST /repos/:owner/:repo/statuses/:sha
    if (rest[0] === 'statuses' && rest.length === 2 && method === 'POST') {
      if (!mayWrite()) return this.send(res, 403, { message: 'Resource not accessible by integration' });
      const sha = rest[1]!;
      let exists = /^[0-9a-f]{40}$/.test(sha);
      if (exists) {
        try {
          git(['--git-dir', bare, 'cat-file', '-e', `${sha}^{commit}`]);
        } catch {
          exists = false;
        }
      }
      if (!exists) return this.send(res, 422, { message: `No commit found for SHA: ${sha}` });
      if (!['error', 'failure', 'pending', 'success'].includes(body.state)) return invalid('state is not included in the list');
      if (body.description != null && String(body.description).length > 140) return invalid('description is too long (maximum is 140 characters)');
      if (body.target_url != null && !/^https?:\/\//.test(String(body.target_url))) return invalid('target_url must be an http(s) URL');
      const st: FakeStatus = {
        owner,
        repo: r.name,
        sha,
        state: body.state,
        target_url: body.target_url ?? null,
        description: body.description ?? null,
        context: String(body.context ?? 'default'),
        auth: auth.kind,
        at: new Date().toISOString(),
      };
      this.statuses.push(st);
      return this.send(res, 201, { id: this.nextId++, state: st.state, target_url: st.target_url, description: st.description, context: st.context, created_at: st.at, updated_at: st.at });
    }
    // GET /repos/:owner/:repo/commits/:sha/statuses (newest first, as GitHub lists them)
    if (rest[0] === 'commits' && method === 'GET') {
      return this.send(res, 200, this.statuses.filter((s) => s.owner === owner && s.repo === r.name && s.sha === rest[1]).reverse().map((s) => ({ state: s.state, target_url: s.target_url, description: s.description, context: s.context, created_at: s.at })));
    }
    const json = (c: FakeComment) => ({
      id: c.id,
      node_id: `IC_${c.id}`,
      url: `${this.apiUrl}/repos/${c.owner}/${c.repo}/issues/comments/${c.id}`,
      html_url: `${this.url}/${c.owner}/${c.repo}/pull/${c.number}#issuecomment-${c.id}`,
      body: c.body,
      created_at: c.created_at,
      updated_at: c.updated_at,
    });
    // /repos/:owner/:repo/issues/:number/comments
    if (rest[0] === 'issues' && rest.length === 3 && rest[2] === 'comments' && /^\d+$/.test(rest[1]!)) {
      const number = Number(rest[1]);
      if (!this.pull(owner, r.name, number)) return notFound();
      if (method === 'GET') return this.send(res, 200, this.commentsOn(owner, r.name, number).map(json));
      if (method !== 'POST') return notFound();
      if (!mayWrite()) return this.send(res, 403, { message: 'Resource not accessible by integration' });
      if (typeof body.body !== 'string' || !body.body) return invalid('body is missing');
      if (body.body.length > 65536) return invalid('body is too long (maximum is 65536 characters)');
      const at = new Date().toISOString();
      const c: FakeComment = { id: this.nextId++, owner, repo: r.name, number, body: body.body, created_at: at, updated_at: at, edits: 0 };
      this.comments.set(c.id, c);
      this.commentWrites.push({ op: 'create', owner, repo: r.name, number, id: c.id, body: c.body, auth: auth.kind });
      return this.send(res, 201, json(c));
    }
    // /repos/:owner/:repo/issues/comments/:id
    if (rest[0] === 'issues' && rest[1] === 'comments' && rest.length === 3) {
      const c = this.comments.get(Number(rest[2]));
      if (!c || c.owner.toLowerCase() !== owner.toLowerCase() || c.repo.toLowerCase() !== r.name.toLowerCase()) return notFound();
      if (method === 'GET') return this.send(res, 200, json(c));
      if (!mayWrite()) return this.send(res, 403, { message: 'Resource not accessible by integration' });
      if (method === 'PATCH') {
        if (typeof body.body !== 'string' || !body.body) return invalid('body is missing');
        c.body = body.body;
        c.updated_at = new Date().toISOString();
        c.edits++;
        this.commentWrites.push({ op: 'edit', owner, repo: r.name, number: c.number, id: c.id, body: c.body, auth: auth.kind });
        return this.send(res, 200, json(c));
      }
      if (method === 'DELETE') {
        this.comments.delete(c.id);
        return this.send(res, 204);
      }
    }
    return notFound();
  }

  private createRepoApi(res: http.ServerResponse, owner: string, body: any, _auth?: Auth): void {
    const name = String(body.name ?? '');
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(name)) {
      return this.send(res, 422, { message: 'Repository creation failed.', errors: [{ resource: 'Repository', code: 'custom', field: 'name', message: 'name is invalid' }] });
    }
    if (this.repo(owner, name)) {
      return this.send(res, 422, { message: 'Repository creation failed.', errors: [{ resource: 'Repository', code: 'custom', field: 'name', message: 'name already exists on this account' }] });
    }
    const r = this.createRepo(owner, name, { private: body.private !== false, files: body.auto_init ? { 'README.md': `# ${name}\n` } : undefined });
    this.send(res, 201, this.repoJson(r));
  }

  private branchesOf(bare: string): { name: string; sha: string }[] {
    return git(['--git-dir', bare, 'for-each-ref', '--format=%(refname:short) %(objectname)', 'refs/heads'])
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [name, sha] = l.split(' ');
        return { name: name!, sha: sha! };
      });
  }

  private branchJson(r: FakeRepo, b: { name: string; sha: string }) {
    return { name: b.name, commit: { sha: b.sha, url: `${this.apiUrl}/repos/${r.owner.login}/${r.name}/commits/${b.sha}` }, protected: b.name === r.defaultBranch && false };
  }

  private contents(res: http.ServerResponse, r: FakeRepo, bare: string, p: string, ref: string): void {
    const clean = p.replace(/^\/+|\/+$/g, '');
    const spec = `${ref}:${clean}`;
    let type: string;
    try {
      type = git(['--git-dir', bare, 'cat-file', '-t', spec]).trim();
    } catch {
      return this.send(res, 404, { message: 'Not Found' });
    }
    const api = `${this.apiUrl}/repos/${r.owner.login}/${r.name}/contents`;
    if (type === 'tree') {
      const entries = git(['--git-dir', bare, 'ls-tree', '-l', spec])
        .split('\n')
        .filter(Boolean)
        .map((l) => {
          const [meta, name] = l.split('\t');
          const [, t, sha, size] = meta!.split(/\s+/);
          const full = clean ? `${clean}/${name}` : name!;
          return { type: t === 'tree' ? 'dir' : 'file', size: t === 'tree' ? 0 : Number(size), name: name!, path: full, sha: sha!, url: `${api}/${full}?ref=${ref}` };
        });
      return this.send(res, 200, entries);
    }
    const content = execFileSync('git', ['--git-dir', bare, 'cat-file', 'blob', spec]);
    const sha = git(['--git-dir', bare, 'rev-parse', spec]).trim();
    const b64 = content.toString('base64').replace(/(.{60})/g, '$1\n');
    this.send(res, 200, { type: 'file', encoding: 'base64', size: content.length, name: path.posix.basename(clean), path: clean, content: b64, sha, url: `${api}/${clean}?ref=${ref}` });
  }

  // ---------------------------------------------------------------- web (OAuth, device flow, install page)

  private async web(req: http.IncomingMessage, res: http.ServerResponse, u: URL, raw: Buffer): Promise<void> {
    const form = parseForm(req, raw);
    const method = req.method!;
    if (u.pathname === '/login/oauth/authorize' && method === 'GET') {
      if (!this.browserUser) return this.send(res, 401, { message: 'not signed in' });
      if (u.searchParams.get('client_id') !== this.opts.clientId) return this.send(res, 404, { message: 'unknown client' });
      const to = new URL(u.searchParams.get('redirect_uri')!);
      to.searchParams.set('code', this.oauthCode(this.browserUser));
      if (u.searchParams.get('state')) to.searchParams.set('state', u.searchParams.get('state')!);
      return this.send(res, 302, undefined, { location: to.toString() });
    }
    const installPage = /^\/apps\/([^/]+)\/installations\/new$/.exec(u.pathname);
    if (installPage && method === 'GET') {
      if (!this.nextInstallAccount) return this.send(res, 400, { message: 'no account chosen' });
      const inst = this.install(this.nextInstallAccount, { type: this.accounts.get(this.nextInstallAccount.toLowerCase())?.type });
      const to = new URL(this.setupUrl);
      to.searchParams.set('installation_id', String(inst.id));
      to.searchParams.set('setup_action', 'install');
      if (u.searchParams.get('state')) to.searchParams.set('state', u.searchParams.get('state')!);
      return this.send(res, 302, undefined, { location: to.toString() });
    }
    if (u.pathname === '/login/device/code' && method === 'POST') {
      if (form.client_id !== this.opts.clientId) return this.send(res, 200, { error: 'incorrect_client_credentials' });
      const d: DeviceCode = {
        deviceCode: randomBytes(20).toString('hex'),
        userCode: `${randomBytes(2).toString('hex').toUpperCase()}-${randomBytes(2).toString('hex').toUpperCase()}`,
        clientId: form.client_id!,
        state: 'pending',
        expiresAt: Date.now() + 900_000,
        interval: 1,
      };
      this.deviceCodes.set(d.deviceCode, d);
      return this.send(res, 200, { device_code: d.deviceCode, user_code: d.userCode, verification_uri: `${this.url}/login/device`, expires_in: 900, interval: d.interval });
    }
    if (u.pathname === '/login/oauth/access_token' && method === 'POST') {
      if (form.client_id !== this.opts.clientId) return this.send(res, 200, { error: 'incorrect_client_credentials' });
      if (form.grant_type === 'urn:ietf:params:oauth:grant-type:device_code') {
        const d = this.deviceCodes.get(form.device_code ?? '');
        if (!d) return this.send(res, 200, { error: 'bad_verification_code' });
        if (d.expiresAt <= Date.now()) return this.send(res, 200, { error: 'expired_token' });
        if (d.state === 'denied') return this.send(res, 200, { error: 'access_denied' });
        if (d.state === 'pending') return this.send(res, 200, { error: 'authorization_pending', interval: d.interval });
        this.deviceCodes.delete(d.deviceCode);
        return this.send(res, 200, { access_token: this.userToken(d.login!), token_type: 'bearer', scope: 'repo' });
      }
      if (form.client_secret !== this.opts.clientSecret) return this.send(res, 200, { error: 'incorrect_client_credentials' });
      const login = this.oauthCodes.get(form.code ?? '');
      if (!login) return this.send(res, 200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' });
      this.oauthCodes.delete(form.code!);
      return this.send(res, 200, { access_token: this.userToken(login), token_type: 'bearer', scope: 'repo' });
    }
    return this.send(res, 404, { message: 'Not Found' });
  }

  // ---------------------------------------------------------------- git over smart HTTP

  private gitHttp(req: http.IncomingMessage, res: http.ServerResponse, u: URL): void {
    const m = /^\/([^/]+)\/([^/]+)\.git(\/.*)$/.exec(u.pathname)!;
    const [owner, name, rest] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!), m[3]!];
    const refuse = () => {
      this.gitRequests.push({ path: u.pathname, ok: false });
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub"', 'content-type': 'text/plain' });
      res.end('Invalid username or token.\n');
    };
    const h = req.headers.authorization ?? '';
    const bm = /^Basic\s+(\S+)$/i.exec(h);
    if (!bm) return refuse();
    const [user, ...pw] = Buffer.from(bm[1]!, 'base64').toString('utf8').split(':');
    const token = this.instTokens.get(pw.join(':'));
    const r = this.repo(owner, name);
    if (user !== 'x-access-token' || !token || token.expiresAt <= Date.now() || !r || !this.canSee({ kind: 'installation', token, raw: '' }, r)) return refuse();
    if (rest.includes('git-receive-pack') || u.searchParams.get('service') === 'git-receive-pack') {
      req.resume();
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end('read-only\n');
      return;
    }
    this.gitRequests.push({ path: u.pathname, ok: true });
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: this.root,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: `/${r.owner.login.toLowerCase()}/${r.name.toLowerCase()}.git${rest}`,
      REQUEST_METHOD: req.method ?? 'GET',
      QUERY_STRING: u.search.replace(/^\?/, ''),
      CONTENT_TYPE: String(req.headers['content-type'] ?? ''),
      REMOTE_USER: 'x-access-token',
      REMOTE_ADDR: '127.0.0.1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: 'HTTP/1.1',
    };
    if (req.headers['content-length']) env.CONTENT_LENGTH = String(req.headers['content-length']);
    if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = String(req.headers['content-encoding']);
    if (req.headers['git-protocol']) env.GIT_PROTOCOL = String(req.headers['git-protocol']);
    const child = spawn(GIT_HTTP_BACKEND, [], { env, stdio: ['pipe', 'pipe', 'ignore'] });
    req.pipe(child.stdin);
    child.stdin.on('error', () => {});
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      let idx = head.indexOf('\r\n\r\n');
      let sepLen = 4;
      if (idx < 0) {
        idx = head.indexOf('\n\n');
        sepLen = 2;
      }
      if (idx < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, idx).toString('utf8').split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number(v.split(' ')[0]) || 200;
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(idx + sepLen));
    });
    child.on('close', () => {
      if (!headersDone) {
        res.writeHead(500);
      }
      res.end();
    });
  }
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parseForm(req: http.IncomingMessage, raw: Buffer): Record<string, string | undefined> {
  const type = String(req.headers['content-type'] ?? '');
  const text = raw.toString('utf8');
  if (type.includes('application/json')) {
    try {
      const o = JSON.parse(text || '{}');
      return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v === undefined || v === null ? undefined : String(v)]));
    } catch {
      return {};
    }
  }
  return Object.fromEntries(new URLSearchParams(text));
}

/**
 * A fake `gh` CLI: a shell script answering `gh auth status`, `gh auth token` and `gh --version` from a
 * token file beside it. `login(token)` signs it in, `logout()` signs it out.
 */
export function makeFakeGh(dir?: string): { bin: string; login(token: string): void; logout(): void; dir: string } {
  const d = dir ?? mkdtempSync(path.join(os.tmpdir(), 'fake-gh-'));
  const bin = path.join(d, 'gh');
  const tokenFile = path.join(d, 'token');
  writeFileSync(
    bin,
    [
      '#!/bin/sh',
      `TOKEN_FILE='${tokenFile}'`,
      'case "$1 $2" in',
      '  "auth status") if [ -s "$TOKEN_FILE" ]; then echo "Logged in to github.com"; exit 0; fi; echo "You are not logged into any GitHub hosts. To log in, run: gh auth login" >&2; exit 1;;',
      '  "auth token") if [ -s "$TOKEN_FILE" ]; then cat "$TOKEN_FILE"; exit 0; fi; echo "no oauth token found" >&2; exit 1;;',
      'esac',
      'if [ "$1" = "--version" ]; then echo "gh version 2.99.0 (fake)"; exit 0; fi',
      'echo "unknown command" >&2',
      'exit 1',
      '',
    ].join('\n'),
  );
  chmodSync(bin, 0o755);
  writeFileSync(tokenFile, '');
  return {
    bin,
    dir: d,
    login: (token: string) => writeFileSync(tokenFile, `${token}\n`),
    logout: () => writeFileSync(tokenFile, ''),
  };
}

/** An RSA keypair for a test GitHub App. */
export function appKeyPair(): { privateKey: string; publicKey: string } {
  return generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
}
