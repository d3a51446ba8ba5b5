import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cellText, COMMENT_MARKER, linkTarget, outcomeOf, parsePullRequest, pullEnvironment, renderPreviewComment, type CommentLine } from '../../src/modules/gitprovider/preview-pulls.js';

const SHA = 'a'.repeat(40);

function payload(over: { action?: string; head?: any; base?: any; number?: number; installation?: any } = {}) {
  const base = { id: 7, full_name: 'acme/shop', name: 'shop', owner: { login: 'acme' } };
  return {
    action: over.action ?? 'opened',
    number: over.number ?? 12,
    pull_request: {
      number: over.number ?? 12,
      head: { ref: 'feature/login', sha: SHA, repo: base, ...(over.head ?? {}) },
      base: { ref: 'main', sha: 'b'.repeat(40), repo: over.base ?? base },
    },
    repository: base,
    ...(over.installation !== undefined ? { installation: over.installation } : { installation: { id: 99 } }),
  };
}

describe('pull_request deliveries: what they ask for', () => {
  it('opened, synchronize and reopened deploy the head branch at the head sha to pr-<number>; closed removes; other actions are ignored', () => {
    for (const action of ['opened', 'synchronize', 'reopened']) {
      const d = parsePullRequest(payload({ action }))!;
      assert.equal(d.intent, 'deploy', action);
      assert.deepEqual({ number: d.number, owner: d.owner, repo: d.repo, headBranch: d.headBranch, headSha: d.headSha, fork: d.fork, installationId: d.installationId }, { number: 12, owner: 'acme', repo: 'shop', headBranch: 'feature/login', headSha: SHA, fork: false, installationId: '99' });
    }
    assert.equal(parsePullRequest(payload({ action: 'closed' }))!.intent, 'close');
    for (const action of ['edited', 'labeled', 'assigned', 'ready_for_review', '']) assert.equal(parsePullRequest(payload({ action }))!.intent, 'ignore', action);
    assert.equal(pullEnvironment(12), 'pr-12');
  });

  it('a head in another repository (a fork), or in one GitHub no longer knows, is a fork', () => {
    const fork = { id: 8, full_name: 'mallory/shop', name: 'shop', owner: { login: 'mallory' }, fork: true };
    assert.equal(parsePullRequest(payload({ head: { repo: fork } }))!.fork, true);
    assert.equal(parsePullRequest(payload({ head: { repo: null } }))!.fork, true);
    // Without ids, the full names decide (case-insensitively).
    const noIds = (full: string) => payload({ head: { repo: { full_name: full } }, base: { full_name: 'acme/shop' } });
    assert.equal(parsePullRequest(noIds('ACME/Shop'))!.fork, false);
    assert.equal(parsePullRequest(noIds('mallory/shop'))!.fork, true);
  });

  it('a head that cannot be deployed (a branch name git refuses, no full sha) is ignored; a payload without a pull request or repository is not one', () => {
    for (const ref of ['--upload-pack=x', 'a b', 'a..b', 'x:y', '', 'a@{1}', 'x.lock']) assert.equal(parsePullRequest(payload({ head: { ref } }))!.intent, 'ignore', ref);
    for (const sha of ['abc', '', 'g'.repeat(40)]) assert.equal(parsePullRequest(payload({ head: { sha } }))!.intent, 'ignore', sha);
    // closed needs no usable head
    assert.equal(parsePullRequest(payload({ action: 'closed', head: { sha: '' } }))!.intent, 'close');
    assert.equal(parsePullRequest({ action: 'opened', number: 1 }), null);
    assert.equal(parsePullRequest({ ...payload(), repository: {} }), null);
    assert.equal(parsePullRequest({ ...payload(), number: -1, pull_request: { ...payload().pull_request, number: -1 } }), null);
    assert.equal(parsePullRequest(null), null);
    assert.equal(parsePullRequest(payload({ installation: { id: 'x;y' } }))!.installationId, null);
  });
});

describe('the pull request comment', () => {
  const line = (over: Partial<CommentLine> = {}): CommentLine => ({
    project: 'Shop',
    environment: 'pr-12',
    commit: SHA,
    commitUrl: `https://github.com/acme/shop/commit/${SHA}`,
    state: 'success',
    description: 'The preview is ready',
    previewUrl: 'http://feature-login--shop.apps.example.test',
    deploymentUrl: 'https://berth.example.test/projects/prj_1/deployments/dpl_1',
    updatedAt: '2024-05-01T12:34:56.789Z',
    ...over,
  });

  it('is a marked table with the commit, the status, the preview URL, the deployment page and the time', () => {
    const md = renderPreviewComment([line()]);
    const rows = md.split('\n');
    assert.equal(rows[0], COMMENT_MARKER);
    assert.ok(rows.includes('| Project | Commit | Status | Preview | Deployment | Updated |'));
    const row = rows.find((r) => r.startsWith('| Shop'))!;
    assert.equal(
      row,
      `| Shop (pr-12) | [\`aaaaaaa\`](https://github.com/acme/shop/commit/${SHA}) | Ready | [feature-login--shop.apps.example.test](http://feature-login--shop.apps.example.test/) | [Inspect](https://berth.example.test/projects/prj_1/deployments/dpl_1) | 2024-05-01 12:34 UTC |`,
    );
  });

  it('says building, failed with the reason, or removed once the pull request is closed; one line per project', () => {
    const md = renderPreviewComment([line({ state: 'pending' }), line({ project: 'Blog', state: 'failure', description: 'The deployment failed: its log is on the deployment page' })]);
    assert.match(md, /\| Shop .*\| Building \|/);
    assert.match(md, /\| Blog .*\| Failed: The deployment failed: its log is on the deployment page \|/);
    const closed = renderPreviewComment([line({ state: 'removed' })]);
    assert.match(closed, /\| Removed \| — \| — \|/);
    assert.match(closed, /The pull request was closed: its preview environments were removed\./);
    assert.match(renderPreviewComment([line({ state: 'none', commit: null, previewUrl: null, deploymentUrl: null })]), /\| — \| Not deployed \| — \| — \|/);
  });

  it('a project name cannot inject markdown, HTML or links; only http(s) URLs become links', () => {
    const md = renderPreviewComment([line({ project: '<img src=x onerror=alert(1)> [click](http://evil) | x\n# title' })]);
    assert.ok(!md.includes('<img'));
    assert.ok(!md.includes('](http://evil)'));
    assert.equal(md.split('\n').filter((r) => r.startsWith('| ')).length, 3, 'no extra table row');
    assert.equal(cellText('a|b'), 'a\\|b');
    assert.equal(linkTarget('javascript:alert(1)'), null);
    assert.equal(linkTarget('not a url'), null);
    assert.equal(linkTarget('http://x.test/a b)'), 'http://x.test/a%20b%29');
  });

  it('a settled deployment becomes success, failure or error with a short reason, never its log', () => {
    assert.deepEqual(outcomeOf('ready').state, 'success');
    assert.deepEqual(outcomeOf('failed').state, 'failure');
    assert.deepEqual(outcomeOf('cancelled').state, 'error');
    assert.deepEqual(outcomeOf('superseded').state, 'error');
    for (const s of ['ready', 'failed', 'cancelled', 'superseded'] as const) assert.ok(outcomeOf(s).description.length <= 140);
  });
});
