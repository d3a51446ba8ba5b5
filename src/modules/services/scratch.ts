/**
 * A throwaway instance of a managed service (backups' restores and restore tests, docs/services.md
 * "Backups"): the same kind, version, credentials and identity as the service, in a box of its own,
 * on a data folder the caller names (a fresh one: initialised as on a first start). It answers its
 * readiness check before `openScratch` returns; `exec` runs the kind's client programs inside its box,
 * so an artifact is read and loaded under the project's uid, never the server's.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import type { Box, Identity, RuntimeDriver } from '../../runtime/driver.js';
import { chownTree } from '../../runtime/identity.js';
import { LineSplitter } from '../../runtime/redact.js';
import { openCredentials, type Credentials } from './credentials.js';
import { enginePlan, engineEnv, programOf, readyPollMs, type EnginePlan, type EngineStep } from './engines.js';
import type { ServiceKind } from './kinds.js';
import type { ManagedServiceRow } from './services.store.js';
import { settleWithin } from '../../lib/settle-within.js';
import { syncFilesystemOf } from '../../lib/sync-fs.js';

const READY_TIMEOUT_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ScratchResult {
  ok: boolean;
  code: number | null;
  /** The last 8 KiB of its output (stdout and stderr), secrets redacted. */
  out: string;
  /** How many output lines matched `count`. */
  matched: number;
}

export interface ScratchInstance {
  /** Where it listens (from inside its box: 127.0.0.1 on this port). */
  port: number;
  credentials: Credentials;
  /** The plan it runs (the kind's client programs' environment: `ready.env`). */
  plan: EnginePlan;
  /** A client program of the kind as its box runs it (a host path, or a name on the image's PATH). */
  program(name: string): string;
  exec(step: EngineStep, count?: RegExp): Promise<ScratchResult>;
  /** Stops the server (cleanly: its data folder is whole afterwards) and frees the box. */
  close(): Promise<void>;
}

export interface ScratchDeps {
  driver: RuntimeDriver;
  identityOf(orgId: string, projectId: string): Promise<Identity | null>;
  image?(kind: ServiceKind): { ref: string; fix: string };
}

function redact(text: string, secret: string): string {
  return secret ? text.split(secret).join('[redacted]') : text;
}

async function run(box: Box, step: EngineStep, cwd: string, secret: string, count?: RegExp): Promise<ScratchResult> {
  const p = box.exec(step.argv, { cwd, env: engineEnv(step.env) });
  let out = '';
  let matched = 0;
  const keep = (line: string) => {
    if (count?.test(line)) matched++;
    out = (out + line + '\n').slice(-8192);
  };
  for (const s of [p.stdout, p.stderr]) {
    if (!s) continue;
    const lines = new LineSplitter(keep);
    s.on('data', (c: Buffer) => lines.push(c));
    s.on('end', () => lines.end());
    s.on('error', () => {});
  }
  const res = await p.exited;
  const text = redact(out, secret);
  return { ok: res.code === 0 && (!step.expect || step.expect.test(text)), code: res.code, out: text, matched };
}

/**
 * Opens a throwaway instance of `row` on `dataDir` (made when missing; its configuration goes to a
 * sibling `<dataDir>.conf`, removed by close). `adapt` changes the plan (Redis starts without its
 * append-only file so that it loads an RDB). Throws when it does not answer.
 */
export async function openScratch(ctx: AppContext, deps: ScratchDeps, row: ManagedServiceRow, dataDir: string, name: string, adapt?: (plan: EnginePlan) => EnginePlan): Promise<ScratchInstance> {
  const credentials = openCredentials(ctx.keyring, row.id, row.credentials);
  const secret = credentials.password;
  const identity = await deps.identityOf(row.orgId, row.projectId);
  const ids = { uid: identity?.uid ?? process.getuid?.() ?? 0, gid: identity?.gid ?? process.getgid?.() ?? 0 };
  const confDir = `${dataDir}.conf`;
  for (const d of [dataDir, confDir, path.join(dataDir, 'run')]) mkdirSync(d, { recursive: true, mode: 0o700 });
  const box = await deps.driver.open({
    kind: 'app',
    projectId: row.projectId,
    name: `svc-${row.id}-${name}`,
    identity,
    limits: { cpuCores: Number(row.cpuCores), memoryMb: row.memoryMb },
    appDir: confDir,
    dataDir,
    port: row.port,
    ...(deps.image ? { image: deps.image(row.kind as ServiceKind) } : {}),
  });
  let exited: Promise<unknown> | null = null;
  const close = async () => {
    box.signalAll('SIGTERM');
    if (exited) await settleWithin(exited, 30_000);
    await box.dispose().catch(() => {});
    rmSync(confDir, { recursive: true, force: true });
  };
  try {
    const port = box.port ?? row.port;
    const base = enginePlan({ ...ids, kind: row.kind as ServiceKind, version: row.version, port, memoryMb: row.memoryMb, credentials, inImage: !!deps.image });
    const plan = adapt ? adapt(base) : base;
    for (const [file, text] of Object.entries(plan.files)) writeFileSync(path.join(confDir, file), text, { mode: 0o600 });
    if (identity) {
      await chownTree(confDir, identity);
      await chownTree(dataDir, identity);
    }
    if (plan.init.length && !existsSync(path.join(dataDir, plan.initialisedMarker))) {
      for (const step of plan.init) {
        const res = await run(box, step, confDir, secret);
        if (!res.ok) throw new Error(`the fresh ${row.kind} instance could not be initialised (${path.basename(step.argv[0]!)} exit ${res.code})`);
      }
      await syncFilesystemOf(dataDir);
    }
    const server = box.exec(plan.server.argv, { cwd: confDir, env: engineEnv(plan.server.env) });
    server.stdout?.resume();
    server.stderr?.resume();
    exited = server.exited;
    let gone = false;
    void server.exited.then(() => (gone = true));
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let ready = false;
    for (let i = 0; !ready && !gone && Date.now() < deadline; i++) {
      await sleep(readyPollMs(i));
      ready = (await run(box, plan.ready, confDir, secret)).ok;
    }
    if (!ready) throw new Error(`the fresh ${row.kind} instance did not answer${gone ? ' (it exited: the artifact may be damaged)' : ` within ${READY_TIMEOUT_MS / 1000} s`}`);
    for (const step of plan.after) {
      const res = await run(box, step, confDir, secret);
      if (!res.ok) throw new Error(`the fresh ${row.kind} instance's users and database could not be made (exit ${res.code})`);
    }
    for (const f of plan.secretFiles) rmSync(path.join(confDir, f), { force: true });
    return { port, credentials, plan, program: (p) => programOf(row.kind as ServiceKind, row.version, p, !!deps.image), exec: (step, count) => run(box, step, confDir, secret, count), close };
  } catch (e) {
    await close();
    throw e;
  }
}
