import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import assert from 'node:assert/strict';
import type { TestServer } from '../support/harness.js';
import { waitForDeployment } from '../support/wait.js';

/**
 * A hostile app and build step: each route tries one thing the outside review did and answers
 * `ok ...` or `err <code>`. Written into a folder, packed and deployed through the upload flow.
 */
const PROBE_APP = `
const http = require('node:http');
const fs = require('node:fs');
const net = require('node:net');
const { spawn } = require('node:child_process');
const q = (u, k) => new URL(u, 'http://x').searchParams.get(k);
const hogs = [];
const server = http.createServer((req, res) => {
  const send = (s) => res.end(String(s));
  const fail = (e) => send('err ' + (e && e.code ? e.code : e && e.message));
  const u = req.url;
  try {
    if (u.startsWith('/whoami')) return send(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), pid: process.pid, procs: fs.readdirSync('/proc').filter((n) => /^\\\\d+$/.test(n)).length, data: process.env.DATA_DIR, home: process.env.HOME, cwd: process.cwd() }));
    if (u.startsWith('/read')) return send('ok ' + fs.readFileSync(q(u, 'path')).length);
    if (u.startsWith('/list')) return send('ok ' + fs.readdirSync(q(u, 'path')).join(','));
    if (u.startsWith('/write')) { fs.writeFileSync(q(u, 'path'), 'x'); return send('ok'); }
    if (u.startsWith('/kill')) { process.kill(Number(q(u, 'pid')), 'SIGKILL'); return send('ok'); }
    if (u.startsWith('/connect')) {
      const s = net.connect(Number(q(u, 'port')), q(u, 'host'));
      s.setTimeout(1500, () => { s.destroy(); send('err TIMEOUT'); });
      s.on('connect', () => { s.destroy(); send('ok'); });
      s.on('error', fail);
      return;
    }
    if (u.startsWith('/bind')) { const s = net.createServer((c) => c.end('bound-port-answer')); s.on('error', fail); s.listen(Number(q(u, 'port')), '0.0.0.0', () => send('ok')); return; }
    if (u.startsWith('/cgescape')) {
      const out = [];
      for (const f of ['/sys/fs/cgroup/cgroup.procs', '/sys/fs/cgroup/memory/cgroup.procs', '/sys/fs/cgroup/pids/cgroup.procs']) {
        try { fs.writeFileSync(f, String(process.pid)); out.push('ok'); } catch (e) { out.push(e.code); }
      }
      return send(out.join(','));
    }
    if (u.startsWith('/detach')) { const c = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600000)', q(u, 'marker')], { detached: true, stdio: 'ignore' }); c.unref(); return send('ok'); }
    if (u.startsWith('/hog')) { const mb = Number(q(u, 'mb')); for (let i = 0; i < mb; i++) hogs.push(Buffer.alloc(1024 * 1024, 1)); return send('ok ' + hogs.length); }
    send('probe ' + process.pid);
  } catch (e) { fail(e); }
});
server.listen(Number(process.env.PORT), process.env.HOST);
`;

/** The build step: tries the same from the build, prints one line per attempt, never fails the build. */
const PROBE_BUILD = `
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const attempt = (name, fn) => { try { console.log('probe ' + name + ': ok ' + fn()); } catch (e) { console.log('probe ' + name + ': err ' + (e.code || e.message)); } };
attempt('uid', () => process.getuid());
attempt('secret-key', () => fs.readFileSync(process.env.PROBE_SECRET_KEY).length);
attempt('database', () => fs.readFileSync(process.env.PROBE_DATABASE).length);
attempt('other-volume', () => fs.readdirSync(process.env.PROBE_OTHER_VOLUME).join(','));
attempt('kill-server', () => { process.kill(Number(process.env.PROBE_SERVER_PID), 'SIGKILL'); return 'sent'; });
attempt('write-app', () => { fs.writeFileSync('/app/built.txt', 'built'); return 'written'; });
const marker = process.env.PROBE_MARKER;
const c = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 600000)', marker], { detached: true, stdio: 'ignore' });
c.unref();
// Still alive when the step ends (the step itself exits right after): only the box's end kills it.
console.log('probe detached: ' + (c.pid ? 'started' : 'failed'));
let n = 0;
const kids = [];
for (; n < 3000; n++) {
  let child;
  try { child = spawn('sleep', ['30'], { stdio: 'ignore' }); } catch (e) { break; }
  child.on('error', () => {});
  if (!child.pid) break;
  kids.push(child);
}
console.log('probe forked: ' + n);
for (const k of kids) try { k.kill('SIGKILL'); } catch {}
`;

export function writeProbe(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'server.js'), PROBE_APP);
  writeFileSync(path.join(dir, 'build.js'), PROBE_BUILD);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'probe', version: '1.0.0', private: true, scripts: { start: 'node server.js' } }));
  return dir;
}

/** Packs `dir`, uploads it, and deploys it as a new project; answers the project and its deployment once settled. */
export async function deployUpload(server: TestServer, token: string, dir: string, name: string, setup?: (projectId: string) => Promise<void>): Promise<{ projectId: string; slug: string; deployment: any }> {
  const api = server.api(token);
  const file = `${dir}.tgz`;
  tar.c({ gzip: true, cwd: dir, sync: true, file, portable: true }, ['.']);
  const s = await api.post('/api/projects/folder/session', { name });
  assert.equal(s.status, 201, s.text);
  const { url, method, headers, sessionId } = s.body.data;
  const up = await fetch(url, { method, headers: { ...headers, 'content-type': 'application/gzip' }, body: readFileSync(file) });
  assert.ok(up.status < 300, await up.text());
  const p = await api.post('/api/projects/ensure', { sessionId, name });
  assert.ok(p.status === 200 || p.status === 201, p.text);
  const projectId = p.body.data.id as string;
  await setup?.(projectId);
  const d = await api.post('/api/deployments', { projectId });
  assert.equal(d.status, 202, d.text);
  const deployment = await waitForDeployment(api, d.body.data.id);
  if (deployment.status !== 'ready') {
    const logs = await api.get(`/api/deployments/${deployment.id}/logs?limit=200`);
    deployment.error = `${deployment.error}\n${logs.body.data.map((l: any) => l.line).join('\n')}`;
  }
  return { projectId, slug: p.body.data.slug, deployment };
}
