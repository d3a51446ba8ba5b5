import { HttpClient } from './http.js';
import { startServe, type ServeProcess } from './cli.js';
import { waitFor } from './wait.js';

/**
 * Several real `berth serve` processes on one PostgreSQL database and one data dir (docs/scale-out.md,
 * "Several Berth instances on one PostgreSQL"), each with its own name, API port and edge port on
 * 127.0.0.1. Every child is killed by `stopAll` (SIGKILL when `force`), which `after` hooks call even
 * when a test failed.
 */
export interface Instance {
  name: string;
  serve: ServeProcess;
  /** The API's base URL. */
  url: string;
  /** The edge's base URL (`http://127.0.0.1:<port>`), which is also its BERTH_INSTANCE_URL here. */
  edgeUrl: string;
  edgePort: number;
  pid: number;
  api(token?: string): HttpClient;
  /** kill -9 (no clean stop: its leases run out). */
  kill(): Promise<void>;
}

export interface InstancesOptions {
  names: string[];
  dataDir: string;
  databaseUrl: string;
  /** Shared by every instance (BERTH_SECRET_KEY, BERTH_LOCAL_ROOTS, ...). */
  env: Record<string, string>;
}

export class Instances {
  readonly all: Instance[] = [];

  /** Starts one instance per name, one after the other (each waits for its API and edge lines). */
  static async start(opts: InstancesOptions): Promise<Instances> {
    const set = new Instances();
    try {
      for (const name of opts.names) set.all.push(await startInstance(name, opts));
    } catch (e) {
      await set.stopAll(true);
      throw e;
    }
    return set;
  }

  byName(name: string): Instance {
    const i = this.all.find((x) => x.name === name);
    if (!i) throw new Error(`no instance ${name}`);
    return i;
  }

  /** The instance whose edge is at `address` (an owner row's address). */
  byEdge(address: string): Instance | undefined {
    return this.all.find((x) => x.edgeUrl === address);
  }

  /** Stops every instance still running: SIGTERM (a clean stop), or SIGKILL with `force`. */
  async stopAll(force = false): Promise<void> {
    await Promise.all(this.all.map((i) => i.serve.stop(force ? 'SIGKILL' : 'SIGTERM').catch(() => i.serve.child.kill('SIGKILL'))));
  }
}

async function startInstance(name: string, opts: InstancesOptions): Promise<Instance> {
  const env: Record<string, string> = {
    BERTH_LOG_LEVEL: 'warn',
    ...opts.env,
    BERTH_DATA_DIR: opts.dataDir,
    DATABASE_URL: opts.databaseUrl,
    BERTH_INSTANCE_NAME: name,
  };
  const serve = await startServe(['--port', '0', '--host', '127.0.0.1', '--edge-port', '0'], env);
  try {
    const m = await waitFor(() => /edge listening on (http:\/\/127\.0\.0\.1:(\d+))\n/.exec(serve.output()), `the edge line of instance ${name}`, 20000);
    const url = serve.url;
    const pid = serve.child.pid!;
    return {
      name,
      serve,
      url,
      edgeUrl: m[1]!,
      edgePort: Number(m[2]),
      pid,
      api: (token?: string) => new HttpClient(url, token),
      async kill() {
        await serve.stop('SIGKILL');
      },
    };
  } catch (e) {
    await serve.stop('SIGKILL');
    throw e;
  }
}
