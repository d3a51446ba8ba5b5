/**
 * Builds that do not start from nothing (issue 39 point 5): for apps with real dependencies from the npm
 * registry (an Express app, a Vite React app, a Next.js app), the second build of the unchanged app
 * against its first (target <= 0.3) and a build after a one-line source change against the first
 * (<= 0.4), on the sandbox runtime and, when a Docker Engine answers, the docker runtime. Each build's
 * time per step comes from its build log's timestamps. `BENCH_BUILD_APPS=express,vite` picks apps;
 * `BENCH_BUILD_RUNTIMES=sandbox` picks runtimes; `BENCH_BUILD_LOG=1` prints each build's log with times to stderr.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { api, tgzOf, uploadAndDeploy, waitReady } from './hello.js';
import { startChild, type Row } from './lib.js';

type Files = Record<string, string>;

const APPS: Record<string, { files: Files; change: [string, string] }> = {
  express: {
    files: {
      'package.json': JSON.stringify({ name: 'bench-express', private: true, scripts: { start: 'node server.js' }, dependencies: { express: '^4.21.2' } }),
      'server.js': "const express = require('express');\nconst app = express();\napp.get('/', (req, res) => res.type('text').send('hello v1'));\napp.listen(Number(process.env.PORT));\n",
    },
    change: ['server.js', "const express = require('express');\nconst app = express();\napp.get('/', (req, res) => res.type('text').send('hello v2'));\napp.listen(Number(process.env.PORT));\n"],
  },
  vite: {
    files: {
      'package.json': JSON.stringify({ name: 'bench-vite', private: true, type: 'module', scripts: { build: 'vite build' }, dependencies: { react: '^19.1.0', 'react-dom': '^19.1.0' }, devDependencies: { vite: '^7.1.0', '@vitejs/plugin-react': '^5.0.0' } }),
      'vite.config.js': "import { defineConfig } from 'vite';\nimport react from '@vitejs/plugin-react';\nexport default defineConfig({ plugins: [react()] });\n",
      'index.html': '<!doctype html><html><body><div id="root"></div><script type="module" src="/src/main.jsx"></script></body></html>\n',
      'src/main.jsx': "import { createRoot } from 'react-dom/client';\ncreateRoot(document.getElementById('root')).render(<h1>hello v1</h1>);\n",
    },
    change: ['src/main.jsx', "import { createRoot } from 'react-dom/client';\ncreateRoot(document.getElementById('root')).render(<h1>hello v2</h1>);\n"],
  },
  next: {
    files: {
      'package.json': JSON.stringify({ name: 'bench-next', private: true, scripts: { build: 'next build', start: 'next start -p $PORT' }, dependencies: { next: '^15.5.0', react: '^19.1.0', 'react-dom': '^19.1.0' } }),
      'pages/index.js': 'export default function Home() { return <h1>hello v1</h1>; }\n',
    },
    change: ['pages/index.js', 'export default function Home() { return <h1>hello v2</h1>; }\n'],
  },
};

function write(dir: string, files: Files): void {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), text);
  }
}

/** Seconds each part of a build took, from its log's timestamps: up to the install, install, build, the rest to ready. */
async function steps(url: string, token: string, id: string, total: number): Promise<string> {
  const lines = (await api(url, token, 'GET', `/api/deployments/${id}/logs?limit=5000`)) as { ts: string; line: string }[];
  const at = (re: RegExp) => {
    const l = lines.find((x) => re.test(x.line));
    return l ? Date.parse(l.ts) : null;
  };
  const t0 = Date.parse(lines[0]!.ts);
  // BENCH_BUILD_LOG=1: the build log with each line's second since the build's start, to stderr (the framework's own phases).
  if (process.env.BENCH_BUILD_LOG === '1') for (const l of lines) console.error(`[build-log ${id}] +${((Date.parse(l.ts) - t0) / 1000).toFixed(1)} s ${l.line}`);
  const install = at(/^\[berth\] install: /);
  const build = at(/^\[berth\] build: /);
  const done = at(/^\[berth\] build finished/);
  const s = (a: number | null, b: number | null) => (a !== null && b !== null ? `${((b - a) / 1000).toFixed(1)}` : '-');
  const reused = lines.some((l) => /install: reused/.test(l.line));
  if (lines.some((l) => /^\[berth\] build: reused the output/.test(l.line))) return `output reused (source and plan unchanged) after ${s(t0, done)} s, to ready ${((total - ((done ?? t0) - t0)) / 1000).toFixed(1)} s`;
  return `before install ${s(t0, install ?? build ?? done)} s, install ${reused ? 'reused' : s(install, build ?? done)}${reused ? '' : ' s'}, build ${s(build, done)} s, to ready ${((total - ((done ?? t0) - t0)) / 1000).toFixed(1)} s`;
}

export async function buildsBench(): Promise<Row[]> {
  const rows: Row[] = [];
  const apps = (process.env.BENCH_BUILD_APPS ?? 'express,vite,next').split(',').filter((a) => APPS[a]);
  const runtimes = (process.env.BENCH_BUILD_RUNTIMES ?? 'sandbox,docker').split(',');
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-builds-bench-'));
  try {
    // Lockfiles made once from the registry, as a user's repository has them (a reused install needs one).
    for (const name of apps) {
      const dir = path.join(tmp, 'src', name);
      write(dir, APPS[name]!.files);
      execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'ignore' });
    }
    for (const runtime of runtimes) {
      const env: Record<string, string> = { BERTH_CGROUPS: process.env.BERTH_CGROUPS ?? '' };
      // Offline, the docker runtime builds on the base image scripts/docker-base-images.sh makes (as bench/docker.ts).
      if (runtime === 'docker') Object.assign(env, { BERTH_RUNTIME: 'docker', BERTH_IMAGE_NODE: process.env.BERTH_IMAGE_NODE ?? 'berth-base/node:20' });
      let berth;
      try {
        berth = await startChild('bench/servers/berth.mjs', env, 60_000);
      } catch (e) {
        rows.push({ bench: 'builds', metric: `${runtime}: not run (${(e as Error).message.split('\n')[0]})`, value: NaN, unit: '' });
        continue;
      }
      const { url, token } = berth.info as { url: string; token: string };
      const projects: string[] = [];
      try {
        const health = await api(url, token, 'GET', '/api/health');
        if (health.runtime?.driver !== runtime) {
          rows.push({ bench: 'builds', metric: `${runtime}: not run (the server runs ${health.runtime?.driver})`, value: NaN, unit: '' });
          continue;
        }
        for (const name of apps) {
          try {
            rows.push(...(await appRows(url, token, tmp, runtime, name, projects)));
          } catch (e) {
            console.error(`bench builds: ${name} (${runtime}) failed: ${(e as Error).message}`);
            rows.push({ bench: 'builds', metric: `${name} (${runtime}): failed (stderr says why)`, value: NaN, unit: '', ok: false });
          }
        }
      } finally {
        // Berth removes a deleted project's app (a docker runtime's containers outlive the server), volumes and images.
        for (const id of projects.splice(0)) await api(url, token, 'DELETE', `/api/projects/${id}`).catch(() => {});
        await berth.stop();
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return rows;
}

/** The three builds of one app on one runtime: first, unchanged, one-line change. */
async function appRows(url: string, token: string, tmp: string, runtime: string, name: string, projects: string[]): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = path.join(tmp, runtime, name);
  mkdirSync(path.dirname(dir), { recursive: true });
  execFileSync('cp', ['-a', path.join(tmp, 'src', name), dir]);
  const project = await api(url, token, 'POST', '/api/projects', { name: `bench-${name}-${runtime}` });
  projects.push(project.id);
  const timed = async (): Promise<{ ms: number; steps: string }> => {
    const t0 = performance.now();
    const id = await uploadAndDeploy(url, token, project.id, tgzOf(dir));
    await waitReady(url, token, id, 900_000);
    const ms = performance.now() - t0;
    return { ms, steps: await steps(url, token, id, ms) };
  };
  const first = await timed();
  const second = await timed();
  write(dir, Object.fromEntries([APPS[name]!.change]));
  const changed = await timed();
  rows.push({ bench: 'builds', metric: `${name} (${runtime}) first build to ready: ${first.steps}`, value: first.ms, unit: 'ms', target: 'reported' });
  rows.push({ bench: 'builds', metric: `${name} (${runtime}) unchanged rebuild vs first: ${second.steps}`, value: second.ms, reference: first.ms, ratio: second.ms / first.ms, unit: 'ms', target: '<= 0.3', ok: second.ms / first.ms <= 0.3 });
  rows.push({ bench: 'builds', metric: `${name} (${runtime}) one-line change vs first: ${changed.steps}`, value: changed.ms, reference: first.ms, ratio: changed.ms / first.ms, unit: 'ms', target: '<= 0.4', ok: changed.ms / first.ms <= 0.4 });
  return rows;
}
