import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DockerEngine } from '../src/runtime/docker/engine.js';
import { instanceKeyOf } from '../src/runtime/drivers.js';
import { load, ROOT, startChild, type Child, type LoadResult, type Row } from './lib.js';
import { api, HELLO, tgzOf, uploadAndDeploy, waitReady, writeHelloApp } from './hello.js';

/**
 * The docker runtime (issue 19 point 6, contract section 13), one run:
 * - the edge in front of the hello app run as a container (a Berth with BERTH_RUNTIME=docker, the app
 *   deployed as a plan-built Node app on BERTH_IMAGE_NODE=berth-base/node:20) against the edge in
 *   front of the same app run bare (a second Berth with BERTH_RUNTIME=process), 32 connections,
 *   rounds alternating: >= 0.8;
 * - the deploy of a Dockerfile project whose image is cached (redeploys of an unchanged upload):
 *   median time from `POST /api/deployments` to `ready` < 3 s; the same for the plan-built app,
 *   informational.
 * Skips (one row, the reason on stderr) when no Docker Engine answers or the base image is missing
 * after scripts/docker-base-images.sh. Everything the servers left in the engine is removed at the end
 * (their containers outlive a server that stops, by design); BENCH_KEEP=1 leaves it, and the servers'
 * data dirs, for a look afterwards.
 */

const BASE = 'berth-base/node:20';

const DOCKERFILE = `FROM ${BASE}
COPY . /srv
WORKDIR /srv
CMD ["node", "server.js"]
`;

const ROUNDS = 3;
const WARM_DEPLOYS = 3;
const LOAD = { connections: 32, durationMs: 3000, warmupMs: 500, expect: 200 } as const;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

interface Server {
  url: string;
  token: string;
}

interface Deployed {
  project: { id: string; slug: string };
  host: string;
  edgeUrl: string;
  /** Upload + first deploy (uncached image), ms. */
  cold: number;
  /** `POST /api/deployments` to `ready` of each redeploy of the unchanged upload, ms. */
  warm: number[];
}

/** Polls the deployment every 20 ms until it is ready (throws when it ends otherwise). */
/**
 * A new project of `s` from `archive` (uploaded through the folder session API), deployed once, then
 * redeployed `warm` times from the same upload (its image comes from the build cache).
 */
async function deployTimed(s: Server, archive: Buffer, name: string, warm: number): Promise<Deployed> {
  const project = await api(s.url, s.token, 'POST', '/api/projects', { name });
  const t0 = performance.now();
  await waitReady(s.url, s.token, await uploadAndDeploy(s.url, s.token, project.id, archive));
  const cold = performance.now() - t0;
  const times: number[] = [];
  for (let i = 0; i < warm; i++) {
    const t = performance.now();
    const d = await api(s.url, s.token, 'POST', '/api/deployments', { projectId: project.id });
    await waitReady(s.url, s.token, d.id);
    times.push(performance.now() - t);
  }
  const info = await api(s.url, s.token, 'GET', `/api/projects/${project.id}/info`);
  return { project, host: `${project.slug}.localhost`, edgeUrl: `http://127.0.0.1:${Number(new URL(info.runtime.url).port)}`, cold, warm: times };
}

/** Null when the engine answers and has the base image (built by scripts/docker-base-images.sh when missing); else why not. */
async function whyNot(engine: DockerEngine): Promise<string | null> {
  try {
    await engine.ping();
  } catch (e) {
    return `no Docker Engine answers (${(e as Error).message})`;
  }
  const r = spawnSync('bash', [path.join(ROOT, 'scripts/docker-base-images.sh')], { stdio: ['ignore', 2, 2] });
  if (r.status !== 0) console.error(`scripts/docker-base-images.sh exited with ${r.status ?? r.signal}`);
  const has = await engine.api.getImage(BASE).inspect().then(
    () => true,
    () => false,
  );
  return has ? null : `the base image ${BASE} is missing (scripts/docker-base-images.sh builds it)`;
}

/** Removes what a docker-runtime Berth left in the engine: its containers, networks and the projects' images. */
async function sweep(engine: DockerEngine, key: string, slugs: string[]): Promise<void> {
  for (const c of await engine.api.listContainers({ all: true, filters: { label: [`berth.instance=${key}`] } })) await engine.api.getContainer(c.Id).remove({ force: true }).catch(() => {});
  for (const n of await engine.api.listNetworks({ filters: { label: [`berth.instance=${key}`] } })) await engine.api.getNetwork(n.Id).remove().catch(() => {});
  const images = new Set<string>();
  for (const i of await engine.api.listImages({ filters: { label: [`berth.instance=${key}`] } })) images.add(i.Id);
  for (const slug of slugs) for (const i of await engine.api.listImages({ filters: { reference: [`berth/${slug}:*`] } })) images.add(i.Id);
  for (const id of images) await engine.api.getImage(id).remove({ force: true }).catch(() => {});
}

/**
 * The docker runtime's figures (issue 19 point 6): edge -> container against edge -> bare process
 * (>= 0.8), p99 of both, and deploy time of a cached Dockerfile image (< 3 s) and of a plan-built image.
 */
export async function dockerBench(): Promise<Row[]> {
  const engine = DockerEngine.fromEnv();
  const skip = await whyNot(engine);
  if (skip) {
    console.error(`bench docker: skipping: ${skip}`);
    return [{ bench: 'docker', metric: `skipped: ${skip}`, value: NaN, unit: '' }];
  }

  const rows: Row[] = [];
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'berth-docker-bench-'));
  const children: Child[] = [];
  const slugs: string[] = [];
  let dockerKey: string | null = null;
  try {
    const docker = await startChild('bench/servers/berth.mjs', { BERTH_RUNTIME: 'docker', BERTH_IMAGE_NODE: BASE });
    children.push(docker);
    dockerKey = instanceKeyOf(docker.info.dataDir as string);
    const bare = await startChild('bench/servers/berth.mjs', { BERTH_RUNTIME: 'process', BERTH_CGROUPS: process.env.BERTH_CGROUPS ?? '' });
    children.push(bare);

    // A marker of this run in both folders: the first build of each is not served from an earlier run's cache.
    const nonce = randomBytes(8).toString('hex');
    const planDir = path.join(tmp, 'plan-app');
    writeHelloApp(planDir);
    writeFileSync(path.join(planDir, 'run.txt'), nonce);
    const dockerfileDir = path.join(tmp, 'dockerfile-app');
    mkdirSync(dockerfileDir);
    writeFileSync(path.join(dockerfileDir, 'server.js'), HELLO);
    writeFileSync(path.join(dockerfileDir, 'Dockerfile'), DOCKERFILE);
    writeFileSync(path.join(dockerfileDir, 'run.txt'), nonce);

    // ---- deploys on the docker runtime: cold, then redeploys of the unchanged upload
    const d = docker.info as Server;
    const fromDockerfile = await deployTimed(d, tgzOf(dockerfileDir), 'bench-dockerfile', WARM_DEPLOYS);
    slugs.push(fromDockerfile.project.slug);
    const planArchive = tgzOf(planDir);
    const plan = await deployTimed(d, planArchive, 'bench-plan', WARM_DEPLOYS);
    slugs.push(plan.project.slug);
    console.error(`bench docker: Dockerfile app cold ${fromDockerfile.cold.toFixed(0)} ms, warm ${fromDockerfile.warm.map((t) => t.toFixed(0)).join(', ')} ms`);
    console.error(`bench docker: plan-built app cold ${plan.cold.toFixed(0)} ms, warm ${plan.warm.map((t) => t.toFixed(0)).join(', ')} ms`);
    const warmDockerfile = median(fromDockerfile.warm);
    rows.push({ bench: 'docker', metric: `deploy, cached Dockerfile image (median of ${WARM_DEPLOYS} redeploys)`, value: warmDockerfile, unit: 'ms', reference: fromDockerfile.cold, ratio: warmDockerfile / fromDockerfile.cold, target: '< 3000 ms', ok: warmDockerfile < 3000 });
    const warmPlan = median(plan.warm);
    rows.push({ bench: 'docker', metric: `deploy, plan-built image (median of ${WARM_DEPLOYS} redeploys)`, value: warmPlan, unit: 'ms', reference: plan.cold, ratio: warmPlan / plan.cold });

    // ---- the same app, bare (process driver), for the reference
    const b = bare.info as Server;
    const bareApp = await deployTimed(b, planArchive, 'bench-plan', 0);

    // ---- edge -> container vs. edge -> bare app; rounds alternate so drift in the machine's load hits both alike
    // (after a first untimed run through each, so that neither edge pays its warm-up in a counted round)
    await load({ url: plan.edgeUrl, path: '/', headers: { host: plan.host }, ...LOAD, durationMs: 1500 });
    await load({ url: bareApp.edgeUrl, path: '/', headers: { host: bareApp.host }, ...LOAD, durationMs: 1500 });
    const containerRuns: LoadResult[] = [];
    const bareRuns: LoadResult[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      containerRuns.push(await load({ url: plan.edgeUrl, path: '/', headers: { host: plan.host }, ...LOAD }));
      bareRuns.push(await load({ url: bareApp.edgeUrl, path: '/', headers: { host: bareApp.host }, ...LOAD }));
    }
    for (const [what, runs] of [
      ['container', containerRuns],
      ['bare', bareRuns],
    ] as const) {
      console.error(`bench docker: edge -> ${what}: ${runs.map((r) => `${r.rps.toFixed(0)} req/s p99 ${r.p99.toFixed(1)} ms${r.errors ? ` ${r.errors} errors` : ''}`).join('; ')}`);
    }
    const cRps = median(containerRuns.map((r) => r.rps));
    const bRps = median(bareRuns.map((r) => r.rps));
    const cP99 = median(containerRuns.map((r) => r.p99));
    const bP99 = median(bareRuns.map((r) => r.p99));
    const errors = containerRuns.reduce((a, r) => a + r.errors, 0);
    rows.push({ bench: 'docker', metric: `edge -> container req/s (median of ${ROUNDS})`, value: cRps, unit: 'req/s', reference: bRps, ratio: cRps / bRps, target: '>= 0.8 x edge -> bare app', ok: cRps / bRps >= 0.8 && errors === 0 });
    rows.push({ bench: 'docker', metric: `edge -> container p99 (median of ${ROUNDS})`, value: cP99, unit: 'ms', reference: bP99, ratio: cP99 / bP99 });
  } finally {
    for (const c of children) await c.stop();
    if (dockerKey && !process.env.BENCH_KEEP) await sweep(engine, dockerKey, slugs);
    if (!process.env.BENCH_KEEP) for (const c of children) rmSync(c.info.dataDir as string, { recursive: true, force: true });
    rmSync(tmp, { recursive: true, force: true });
  }
  return rows;
}
