/**
 * Runs managed services with the host's binaries in boxes of the runtime driver (`sandbox`: the
 * project's uid, namespaces, cgroup; `process`: none of that, for development). One box per service,
 * kept across crash restarts; a new box (stop and start, server restart) asks for the address the
 * service had (`address`), so it stays; a crash restarts the server with backoff.
 */
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AppContext } from '../../context.js';
import { nowIso } from '../../lib/ids.js';
import { redactedLines } from '../../runtime/app-output.js';
import type { Box, BoxProcess, Identity, RuntimeDriver } from '../../runtime/driver.js';
import { chownTree } from '../../runtime/identity.js';
import type { UsageTarget } from '../../runtime/usage.js';
import type { WatchedVolume } from '../hosting/index.js';
import { MAX_CONSECUTIVE_FAILURES, restartDelayMs } from '../../runtime/restart-backoff.js';
import { openCredentials } from './credentials.js';
import { enginePlan, engineEnv, readyPollMs, type EnginePlan, type EngineStep } from './engines.js';
import type { ServiceKind } from './kinds.js';
import type { ServiceRunner } from './runner.js';
import { openScratch, type ScratchInstance } from './scratch.js';
import * as store from './services.store.js';
import type { ManagedServiceRow } from './services.store.js';
import { settleWithin } from '../../lib/settle-within.js';
import { syncFilesystemOf } from '../../lib/sync-fs.js';

const READY_TIMEOUT_MS = 60_000;
const LOG_LINES = 500;
/** A server that stayed up this long is healthy again: the next crash starts the backoff over. */
const HEALTHY_AFTER_MS = 60_000;

export interface HostRunnerDeps {
  driver: RuntimeDriver;
  identityOf(orgId: string, projectId: string): Promise<Identity | null>;
  /** The docker runtime: the image of each kind (BERTH_IMAGE_<KIND>); its programs run by name in a container of it. */
  image?(kind: ServiceKind): { ref: string; fix: string };
}

interface Running {
  row: ManagedServiceRow;
  box: Box | null;
  stopping: boolean;
  failures: number;
  timer: NodeJS.Timeout | null;
  /** The current start (or null): what stop() waits for. */
  work: Promise<void> | null;
  exited: Promise<unknown> | null;
  readyAt: number;
  log: string[];
  secrets: string[];
  /** Bumped when a start is given up: the exit of that start's server is then no crash to handle. */
  gen: number;
  secretFiles: string[];
}

class InitError extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class HostServiceRunner implements ServiceRunner {
  private readonly services = new Map<string, Running>();
  /** Each service's last lines, kept after it stopped or failed (GET .../logs). */
  private readonly logLines = new Map<string, string[]>();
  /** Who follows each service's log live (GET .../logs/stream). */
  private readonly followers = new Map<string, Set<(line: string) => void>>();
  private seq = 0;

  constructor(
    private readonly ctx: AppContext,
    private readonly deps: HostRunnerDeps,
  ) {}

  volumeDir(row: Pick<ManagedServiceRow, 'projectId' | 'id'>): string {
    return path.join(this.ctx.config.dataDir, 'volumes', path.basename(row.projectId), '.services', path.basename(row.id));
  }

  address(id: string): { host: string; port: number } | null {
    const r = this.services.get(id);
    if (!r?.box || r.row.status !== 'running') return null;
    return { host: r.box.host, port: r.box.port ?? r.row.port };
  }

  /** Its address once it runs; null at once when it is not starting here, or after `timeoutMs`. */
  async whenRunning(id: string, timeoutMs: number): Promise<{ host: string; port: number } | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const addr = this.address(id);
      if (addr || !this.services.has(id) || Date.now() >= deadline) return addr;
      await sleep(100);
    }
  }

  /** The last lines the service wrote (secrets redacted). */
  logs(id: string): string[] {
    return [...(this.logLines.get(id) ?? [])];
  }

  /** The processes of its box now (host pids). */
  pids(id: string): number[] {
    return this.services.get(id)?.box?.pids() ?? [];
  }

  /** A client program run inside the service's own box (the docker runtime's dumps), or null where dumps run from the host. */
  inService(id: string, argv: string[], env: Record<string, string>): BoxProcess | null {
    const r = this.services.get(id);
    if (!this.deps.image || !r?.box || r.row.status !== 'running') return null;
    return r.box.exec(argv, { cwd: path.join(this.volumeDir(r.row), 'conf'), env: engineEnv(env) });
  }

  scratch(row: ManagedServiceRow, dataDir: string, name: string, adapt?: (plan: EnginePlan) => EnginePlan): Promise<ScratchInstance> {
    return openScratch(this.ctx, this.deps, row, dataDir, `${name}-${++this.seq}`, adapt);
  }

  follow(id: string, fn: (line: string) => void): () => void {
    let set = this.followers.get(id);
    if (!set) this.followers.set(id, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.followers.get(id) === set) this.followers.delete(id);
    };
  }

  forget(id: string): void {
    this.logLines.delete(id);
  }

  /** Keeps a line in the service's log and hands it to its followers. */
  private keep(r: Running, line: string): void {
    r.log.push(line);
    if (r.log.length > LOG_LINES) r.log.splice(0, r.log.length - LOG_LINES);
    for (const fn of this.followers.get(r.row.id) ?? []) fn(line);
  }

  usageTargets(): UsageTarget[] {
    const out: UsageTarget[] = [];
    for (const r of this.services.values()) {
      const box = r.box;
      if (!box?.usage || r.row.status !== 'running') continue;
      out.push({ kind: 'service', name: r.row.id, orgId: r.row.orgId, projectId: r.row.projectId, label: r.row.name, usage: () => box.usage!() });
    }
    return out;
  }

  volumes(): WatchedVolume[] {
    const out: WatchedVolume[] = [];
    for (const r of this.services.values()) {
      if (r.row.status !== 'running') continue;
      const { id, orgId, projectId, environment, name, diskMb } = r.row;
      out.push({ key: `service:${id}`, orgId, projectId, environment, service: name, dir: path.join(this.volumeDir(r.row), 'data'), limitMb: diskMb, note: (line) => this.note(r, line) });
    }
    return out;
  }

  ensure(row: ManagedServiceRow): void {
    const r = this.services.get(row.id);
    if (r && !r.stopping) {
      r.row = { ...r.row, cpuCores: row.cpuCores, memoryMb: row.memoryMb, diskMb: row.diskMb };
      return;
    }
    if (r) {
      // Stopping just now: start once that is over.
      void r.work?.then(() => this.ensure(row));
      return;
    }
    const log = this.logLines.get(row.id) ?? [];
    this.logLines.set(row.id, log);
    const fresh: Running = { row, box: null, stopping: false, failures: 0, timer: null, work: null, exited: null, readyAt: 0, log, secrets: [], gen: 0, secretFiles: [] };
    this.services.set(row.id, fresh);
    fresh.work = this.start(fresh);
  }

  async restart(row: ManagedServiceRow): Promise<void> {
    await this.stop(row.id, false);
    this.ensure(row);
  }

  async stop(id: string, record = true): Promise<void> {
    const r = this.services.get(id);
    if (!r) return;
    r.stopping = true;
    if (r.timer) clearTimeout(r.timer);
    await r.work?.catch(() => {});
    await this.dispose(r);
    if (this.services.get(id) === r) this.services.delete(id);
    if (record) await this.setStatus(r.row, 'stopped', null).catch(() => {});
  }

  async close(): Promise<void> {
    await Promise.all([...this.services.keys()].map((id) => this.stop(id, false)));
  }

  private async dispose(r: Running): Promise<void> {
    const box = r.box;
    if (!box) return;
    box.signalAll('SIGTERM');
    if (r.exited) await settleWithin(r.exited, 10_000);
    await box.dispose().catch(() => {});
    r.box = null;
  }

  private note(r: Running, line: string): void {
    this.keep(r, `${nowIso()} [berth] ${line}`);
  }

  private async setStatus(row: ManagedServiceRow, status: string, lastError: string | null): Promise<void> {
    row.status = status;
    row.lastError = lastError;
    await store.updateManaged(this.ctx.db, row.orgId, row.id, { status, lastError, updatedAt: nowIso() });
  }

  /** Runs one process in the box to its end; its output goes to the service's log. */
  private async run(r: Running, box: Box, step: EngineStep, cwd: string): Promise<{ ok: boolean; out: string }> {
    const p = box.exec(step.argv, { cwd, env: engineEnv(step.env) });
    let out = '';
    p.stdout?.on('data', (c: Buffer) => {
      if (out.length < 4096) out += c.toString();
    });
    redactedLines(step.expect ? { stdout: null, stderr: p.stderr } : p, r.secrets, (_s, line) => this.keep(r, line));
    const res = await p.exited;
    return { ok: res.code === 0 && (!step.expect || step.expect.test(out)), out };
  }

  /** Folders (volume, configuration) and the box, made once per service run; the box outlives crash restarts. */
  private async prepare(r: Running, plan: EnginePlan, identity: Identity | null): Promise<{ box: Box; confDir: string }> {
    const base = this.volumeDir(r.row);
    const dataDir = path.join(base, 'data');
    const confDir = path.join(base, 'conf');
    for (const d of [base, dataDir, confDir]) mkdirSync(d, { recursive: true, mode: 0o700 });
    rmSync(path.join(dataDir, 'run'), { recursive: true, force: true });
    mkdirSync(path.join(dataDir, 'run'), { mode: 0o700 });
    for (const [name, text] of Object.entries(plan.files)) writeFileSync(path.join(confDir, name), text, { mode: 0o600 });
    if (identity) {
      if (statSync(base).uid !== identity.uid) await chownTree(base, identity);
      else await chownTree(confDir, identity).then(() => chownTree(path.join(dataDir, 'run'), identity));
    }
    if (r.box) return { box: r.box, confDir };
    const box = await this.deps.driver.open({
      kind: 'app',
      projectId: r.row.projectId,
      name: `svc-${r.row.id}-${++this.seq}`,
      identity,
      limits: { cpuCores: Number(r.row.cpuCores), memoryMb: r.row.memoryMb },
      appDir: confDir,
      dataDir,
      port: r.row.port,
      service: true,
      // Its address of before, so that apps' DATABASE_URL stays valid across a stop and a server restart.
      ...(r.row.address ? { address: r.row.address } : {}),
      ...(this.deps.image ? { image: this.deps.image(r.row.kind as ServiceKind) } : {}),
    });
    r.box = box;
    if (box.host !== r.row.address) {
      if (r.row.address) this.note(r, `its address ${r.row.address} was taken by another box: it is ${box.host} now (restart the project's app)`);
      r.row.address = box.host;
      await store.updateManaged(this.ctx.db, r.row.orgId, r.row.id, { address: box.host });
    }
    return { box, confDir };
  }

  private async start(r: Running): Promise<void> {
    const row = r.row;
    try {
      if (r.row.status !== 'starting') await this.setStatus(row, 'starting', null);
      const creds = openCredentials(this.ctx.keyring, row.id, row.credentials);
      r.secrets = [creds.password];
      const identity = await this.deps.identityOf(row.orgId, row.projectId);
      // The port: the kind's, in a network of the box's own; a free one of the host otherwise (no root).
      const gen = r.gen;
      const ids = { uid: identity?.uid ?? process.getuid?.() ?? 0, gid: identity?.gid ?? process.getgid?.() ?? 0 };
      const inImage = !!this.deps.image;
      const probe = enginePlan({ ...ids, kind: row.kind as ServiceKind, version: row.version, port: row.port, memoryMb: row.memoryMb, credentials: creds, inImage });
      const { box, confDir } = await this.prepare(r, probe, identity);
      const port = box.port ?? row.port;
      const plan = port === row.port ? probe : enginePlan({ ...ids, kind: row.kind as ServiceKind, version: row.version, port, memoryMb: row.memoryMb, credentials: creds, inImage });
      r.secretFiles = plan.secretFiles;
      if (plan !== probe) for (const [name, text] of Object.entries(plan.files)) writeFileSync(path.join(confDir, name), text, { mode: 0o600 });
      if (identity) await chownTree(confDir, identity);
      if (r.stopping) return;
      const dataDir = path.join(this.volumeDir(row), 'data');
      if (plan.init.length && !existsSync(path.join(dataDir, plan.initialisedMarker))) {
        this.note(r, `first start: initialising the ${row.kind} data folder`);
        for (const step of plan.init) {
          const res = await this.run(r, box, step, confDir);
          if (!res.ok) throw new InitError(`initialisation (${path.basename(step.argv[0]!)}) failed: see the service's log`);
        }
        await syncFilesystemOf(dataDir);
      }
      const proc = box.exec(plan.server.argv, { cwd: confDir, env: engineEnv(plan.server.env) });
      redactedLines(proc, r.secrets, (_s, line) => this.keep(r, line));
      r.exited = proc.exited;
      let exited = false;
      void proc.exited.then(() => {
        exited = true;
        if (!r.stopping && r.gen === gen) void this.crashed(r);
      });
      this.note(r, `starting ${row.kind} ${row.version} on port ${port}`);
      const deadline = Date.now() + READY_TIMEOUT_MS;
      let ready = false;
      for (let i = 0; !ready && !exited && !r.stopping && Date.now() < deadline; i++) {
        await sleep(readyPollMs(i));
        ready = (await this.run(r, box, plan.ready, confDir)).ok;
      }
      if (r.stopping || exited) return;
      if (!ready) throw new Error(`${row.kind} did not answer within ${READY_TIMEOUT_MS / 1000} s`);
      for (const step of plan.after) {
        const res = await this.run(r, box, step, confDir);
        if (!res.ok) throw new Error(`setting up the users and database (${path.basename(step.argv[0]!)}) failed: see the service's log`);
      }
      for (const f of plan.secretFiles) rmSync(path.join(confDir, f), { force: true });
      r.readyAt = Date.now();
      this.note(r, 'ready');
      await this.setStatus(row, 'running', null);
    } catch (e) {
      const message = (e as Error).message;
      this.note(r, message);
      this.ctx.log.warn({ serviceId: row.id, err: message }, 'managed service failed to start');
      r.gen++;
      for (const f of r.secretFiles) rmSync(path.join(this.volumeDir(row), 'conf', f), { force: true });
      if (r.stopping) return;
      // A data folder that cannot be made, or an image that is not there, will not be by trying again.
      if (e instanceof InitError || (e as Error).name === 'ServiceImageMissing') r.failures = MAX_CONSECUTIVE_FAILURES - 1;
      await this.fail(r, message);
    }
  }

  /** The server exited on its own: start it again after a backoff, or leave it failed after too many. */
  private async crashed(r: Running): Promise<void> {
    if (r.stopping) return;
    if (r.readyAt && Date.now() - r.readyAt > HEALTHY_AFTER_MS) r.failures = 0;
    await this.fail(r, `${r.row.kind} exited`);
  }

  private async fail(r: Running, message: string): Promise<void> {
    r.failures++;
    r.readyAt = 0;
    if (r.failures >= MAX_CONSECUTIVE_FAILURES) {
      await this.dispose(r);
      await this.setStatus(r.row, 'failed', message).catch(() => {});
      this.services.delete(r.row.id);
      return;
    }
    await this.setStatus(r.row, 'starting', null).catch(() => {});
    const delay = restartDelayMs(r.failures);
    this.note(r, `${message}; starting again in ${delay} ms (failure ${r.failures} in a row)`);
    await r.box?.killAll().catch(() => {});
    r.timer = setTimeout(() => {
      r.timer = null;
      if (!r.stopping) r.work = this.start(r);
    }, delay);
  }
}
