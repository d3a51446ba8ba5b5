/**
 * Pure parts of preview deployments on GitHub (contract section 16): what a `pull_request` delivery
 * asks for, and the one comment Berth keeps on a pull request (markdown). No I/O here.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */

/** The commit status context Berth reports on a preview's commit. */
export const STATUS_CONTEXT = 'berth/deploy';

/** The preview environment of pull request `number`. */
export const pullEnvironment = (number: number) => `pr-${number}`;

export interface PullRequestDelivery {
  /** `deploy` (opened, synchronize, reopened), `close` (closed), else `ignore` (edited, labeled, ...). */
  intent: 'deploy' | 'close' | 'ignore';
  action: string;
  number: number;
  /** The base repository (where the hook and the projects are). */
  owner: string;
  repo: string;
  headBranch: string;
  headSha: string;
  /**
   * The head is another repository (a fork), or one GitHub no longer knows (a deleted fork). Its code
   * is not deployed automatically: it would build and run with the project's preview env vars, secrets
   * included, on code anyone can push (see the report of issue 22).
   */
  fork: boolean;
  installationId: string | null;
}

const DEPLOY_ACTIONS = new Set(['opened', 'synchronize', 'reopened']);

/** A branch name a deployment may be made of (the deployments area checks it again). */
export function validBranch(b: string): boolean {
  return b.length > 0 && b.length <= 255 && !b.startsWith('-') && !/[\s:~^?*[\\]|\.\.|@\{/.test(b) && !b.endsWith('/') && !b.endsWith('.lock');
}

/** The delivery's meaning, or null when it is not a usable `pull_request` payload. */
export function parsePullRequest(p: any): PullRequestDelivery | null {
  if (!p || typeof p !== 'object') return null;
  const pr = p.pull_request;
  const number = Number(p.number ?? pr?.number);
  if (!pr || typeof pr !== 'object' || !Number.isSafeInteger(number) || number <= 0 || number > 2 ** 31) return null;
  const owner = String(p.repository?.owner?.login ?? p.repository?.owner?.name ?? '');
  const repo = String(p.repository?.name ?? '');
  if (!owner || !repo) return null;
  const action = String(p.action ?? '');
  const headBranch = String(pr.head?.ref ?? '');
  const headSha = String(pr.head?.sha ?? '').toLowerCase();
  const base = pr.base?.repo ?? p.repository;
  const head = pr.head?.repo;
  const sameRepo =
    !!head &&
    (head.id !== undefined && base?.id !== undefined
      ? String(head.id) === String(base.id)
      : String(head.full_name ?? '').toLowerCase() === String(base?.full_name ?? `${owner}/${repo}`).toLowerCase());
  const installationId = p.installation?.id !== undefined && /^\d{1,20}$/.test(String(p.installation.id)) ? String(p.installation.id) : null;
  let intent: PullRequestDelivery['intent'] = DEPLOY_ACTIONS.has(action) ? 'deploy' : action === 'closed' ? 'close' : 'ignore';
  // A deploy needs a head it can build: a branch name and a full commit sha.
  if (intent === 'deploy' && (!validBranch(headBranch) || !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(headSha))) intent = 'ignore';
  return { intent, action, number, owner, repo, headBranch, headSha, fork: !sameRepo, installationId };
}

// ---------------------------------------------------------------- outcomes

/** What a settled deployment's status says: GitHub's state and a short reason (never the log). */
export function outcomeOf(status: 'ready' | 'failed' | 'cancelled' | 'superseded'): { state: 'success' | 'failure' | 'error'; description: string } {
  switch (status) {
    case 'ready':
      return { state: 'success', description: 'The preview is ready' };
    case 'failed':
      return { state: 'failure', description: 'The deployment failed: its log is on the deployment page' };
    case 'cancelled':
      return { state: 'error', description: 'The deployment was cancelled' };
    default:
      return { state: 'error', description: 'Superseded by a newer deployment' };
  }
}

// ---------------------------------------------------------------- the comment

/** One project's line of the comment. */
export interface CommentLine {
  project: string;
  environment: string;
  /** The commit the line reports (null: nothing deployed yet). */
  commit: string | null;
  commitUrl: string | null;
  /** GitHub's status state of the latest deployment, or `removed` once the pull request is closed, `none` before any deployment. */
  state: 'pending' | 'success' | 'failure' | 'error' | 'removed' | 'none';
  /** The status' description (shown for `error`, where it says why). */
  description: string | null;
  previewUrl: string | null;
  deploymentUrl: string | null;
  updatedAt: string;
}

/** The hidden first line of the comment: marks it as Berth's. */
export const COMMENT_MARKER = '<!-- berth:preview-deployments -->';

const LABELS: Record<CommentLine['state'], string> = {
  pending: 'Building',
  success: 'Ready',
  failure: 'Failed',
  error: 'Not deployed',
  removed: 'Removed',
  none: 'Not deployed',
};

/** Text safe inside a markdown table cell: no HTML, no links or emphasis of its own, one line. */
export function cellText(s: string): string {
  return s
    .slice(0, 200)
    .replace(/[\r\n\t]+/g, ' ')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/[\\`*_[\]()|#!~]/g, (c) => `\\${c}`);
}

/** A URL safe as a markdown link target (http(s) only; spaces and parentheses encoded), or null. */
export function linkTarget(u: string | null): string | null {
  if (!u) return null;
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  return url.toString().replace(/[()\s<>]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

function link(text: string, u: string | null): string {
  const t = linkTarget(u);
  return t ? `[${text}](${t})` : text;
}

/** `2024-05-01 12:34 UTC` from an ISO time. */
export function shortTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The comment's markdown: a marker, a title and a table with one line per project. */
export function renderPreviewComment(lines: CommentLine[]): string {
  const out = [COMMENT_MARKER, '**Berth preview deployments**', ''];
  out.push('| Project | Commit | Status | Preview | Deployment | Updated |', '| --- | --- | --- | --- | --- | --- |');
  for (const l of lines) {
    const commit = l.commit ? link(`\`${l.commit.slice(0, 7)}\``, l.commitUrl) : '—';
    let status = LABELS[l.state];
    if ((l.state === 'error' || l.state === 'failure') && l.description) status = `${status}: ${cellText(l.description)}`;
    const previewTarget = l.state === 'removed' ? null : linkTarget(l.previewUrl);
    const preview = previewTarget ? link(cellText(new URL(previewTarget).host), previewTarget) : '—';
    const deployment = l.deploymentUrl && l.state !== 'removed' ? link('Inspect', l.deploymentUrl) : '—';
    out.push(`| ${cellText(l.project)} (${cellText(l.environment)}) | ${commit} | ${status} | ${preview} | ${deployment} | ${shortTime(l.updatedAt)} |`);
  }
  if (lines.length && lines.every((l) => l.state === 'removed')) out.push('', 'The pull request was closed: its preview environments were removed.');
  return out.join('\n');
}
