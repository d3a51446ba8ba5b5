import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as tar from 'tar';
import type { HttpClient } from './http.js';
import { waitForDeployment } from './wait.js';

/**
 * Packs `files` of `dir` (all of it when absent) as a .tar.gz beside it and uploads it through a folder
 * session of `api`'s user, as `berth deploy` and the dashboard do; answers the session's id.
 */
export async function uploadFolder(api: HttpClient, dir: string, opts: { files?: string[]; session?: { projectId: string } | { name: string } } = {}): Promise<string> {
  const file = `${dir}.tgz`;
  tar.c({ gzip: true, cwd: dir, sync: true, file, portable: true }, opts.files ?? ['.']);
  const s = await api.post('/api/projects/folder/session', opts.session ?? { name: 'uploaded' });
  assert.equal(s.status, 201, s.text);
  const { url, method, headers, sessionId } = s.body.data;
  const up = await fetch(url, { method, headers: { ...headers, 'content-type': 'application/gzip' }, body: readFileSync(file) });
  assert.ok(up.status < 300, await up.text());
  return sessionId;
}

/** A new project `name` whose source is `dir`, uploaded and deployed to production: ready. */
export async function deployUploadedFolder(api: HttpClient, dir: string, name: string, files?: string[]): Promise<{ projectId: string; slug: string; deploymentId: string }> {
  const p = await api.post('/api/projects', { name });
  assert.equal(p.status, 201, p.text);
  const sessionId = await uploadFolder(api, dir, { files, session: { projectId: p.body.data.id } });
  const d = await api.post('/api/deployments', { projectId: p.body.data.id, sessionId });
  assert.equal(d.status, 202, d.text);
  const done = await waitForDeployment(api, d.body.data.id, 90_000);
  assert.equal(done.status, 'ready', done.error);
  return { projectId: p.body.data.id, slug: p.body.data.slug, deploymentId: done.id };
}
