import net from 'node:net';

/** Where one running task of a Swarm service answers: its node's address and the port published there. */
export interface Backend {
  host: string;
  port: number;
}

/** A lane's address as the edge uses it: `key` is `host:port`, the key of the edge's connection pool. */
export interface LaneAddress {
  host: string;
  port: number;
  key: string;
}

/** How long one connection attempt to a task may take before the next task is tried. */
const CONNECT_TIMEOUT_MS = 2000;
/** How long a client connection waits in all for a task that accepts it (a rolling update, a moving task). */
const CONNECT_BUDGET_MS = 10_000;
/** A task that closes a connection this soon without answering is taken as gone: the next one gets the bytes. */
const RETRY_WINDOW_MS = 1000;
/** The most of a client's first bytes kept for such a retry (a request's head and a small body). */
const REPLAY_MAX_BYTES = 64 * 1024;
/**
 * How long a request that may be sent twice (not POST, PATCH or LOCK: nginx's rule) waits for the first
 * byte of its answer from a task that has left the running list (the engine is stopping it) before it
 * is sent to another task. A task's port proxy can keep such a connection open without an answer.
 */
const LEFT_TASK_ANSWER_MS = 1000;
/** How often a relay without an answer yet checks whether its task has left. */
const LEFT_TASK_CHECK_MS = 250;
/** How long a lane still accepts after its task left the list (a connection the edge opened just then goes to another task). */
const LANE_LINGER_MS = 5000;
/**
 * A new task's lane joins the rotation once a connection to the task stays open this long: a task the
 * engine reports running before its server listens refuses, or its port proxy accepts and closes at
 * once, and the edge's kept-alive connection on that lane would stay with the task it fell back to.
 */
const LANE_PROBE_HOLD_MS = 150;

function keyOf(b: Backend): string {
  return `${b.host}:${b.port}`;
}

/** One lane: a port of the balancer whose connections go to one task first. */
interface Lane {
  server: net.Server;
  address: LaneAddress | null;
  retired: boolean;
  /** Its task held a connection open (LANE_PROBE_HOLD_MS): the lane is in the rotation. */
  ready: boolean;
  probing: boolean;
}

/**
 * A TCP load balancer on local ports in front of the tasks of a Swarm service (the Swarm routing
 * mesh needs IPVS in the kernel, which not every machine has; this needs nothing). Its own port sends
 * each client connection to the next task in turn. The edge keeps connections alive, so one
 * connection would pin one task: `pick()` answers, per request, the next task's **lane**, a port of
 * its own whose connections go to that task (the edge keeps a pool per lane, so requests balance per
 * request with keep-alive per task). Either way a task that refuses or does not answer is skipped (a
 * task a rolling update just stopped), and when none accepts, the task list is refreshed and tried
 * again until CONNECT_BUDGET_MS. The edge is its only client: the instance's `upstream` is its own port.
 */
export class TcpBalancer {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly lanes = new Map<string, Lane>();
  private host: string | null = null;
  private next = 0;
  private nextLane = 0;
  private closed = false;

  constructor(
    /** The tasks now (read on every connection). */
    private readonly backends: () => Backend[],
    /** Asks for a fresh task list (resolves when it is there). */
    private readonly refresh: () => Promise<void>,
  ) {
    this.server = this.makeServer(null);
  }

  /** Listens on `host` and an ephemeral port; answers the port. */
  listen(host: string): Promise<number> {
    this.host = host;
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, host, () => {
        this.server.off('error', reject);
        resolve((this.server.address() as net.AddressInfo).port);
      });
    });
  }

  /**
   * The address for one request of the edge: the lane of the next running task in turn, or null while
   * no lane listens yet (the edge then uses the balancer's own port). Opens lanes for tasks that came
   * and retires those of tasks that left (the task list is TaskBackends', read every second).
   */
  pick(): LaneAddress | null {
    const ready = this.readyLanes();
    return ready.length ? ready[this.nextLane++ % ready.length]! : null;
  }

  /**
   * Every running task's lane that listens now and whose task accepts connections, in a fixed order
   * (empty while none does yet, or once closed): what an edge on another thread rotates over itself for
   * a while (edge/thread). A lane not ready yet has its task probed (LANE_PROBE_HOLD_MS).
   */
  readyLanes(): LaneAddress[] {
    if (this.closed || !this.host) return [];
    const tasks = new Map(this.backends().map((b) => [keyOf(b), b]));
    const keys = [...tasks.keys()].sort();
    const now = new Set(keys);
    for (const [k, lane] of this.lanes) {
      if (now.has(k)) continue;
      this.lanes.delete(k);
      lane.retired = true;
      setTimeout(() => lane.server.close(), LANE_LINGER_MS).unref();
    }
    const ready: LaneAddress[] = [];
    for (const k of keys) {
      let lane = this.lanes.get(k);
      if (!lane) {
        lane = this.openLane(k, this.host);
        this.lanes.set(k, lane);
      }
      if (!lane.ready) this.probe(lane, tasks.get(k)!);
      else if (lane.address) ready.push(lane.address);
    }
    return ready;
  }

  /** Marks the lane ready once a connection to its task stays open LANE_PROBE_HOLD_MS (one probe at a time). */
  private probe(lane: Lane, task: Backend): void {
    if (lane.probing || lane.retired || this.closed) return;
    lane.probing = true;
    void connect(task, CONNECT_TIMEOUT_MS).then((s) => {
      if (!s) return void (lane.probing = false);
      // Half-open connections (`connect`): a task that ends its side says so with 'end', not 'close'.
      let closed = false;
      s.on('error', () => {});
      s.on('data', () => {});
      s.once('end', () => (closed = true));
      s.once('close', () => (closed = true));
      setTimeout(() => {
        s.destroy();
        lane.probing = false;
        if (!closed) lane.ready = true;
      }, LANE_PROBE_HOLD_MS).unref();
    });
  }

  /**
   * Stops accepting; connections already open may finish for `drainMs`, then they are cut (a deploy
   * swap: the edge's requests in flight on the old instance's port complete).
   */
  close(drainMs = 0): void {
    if (this.closed) return;
    this.closed = true;
    this.server.close();
    for (const lane of this.lanes.values()) lane.server.close();
    this.lanes.clear();
    const cut = () => {
      for (const s of this.sockets) s.destroy();
    };
    if (drainMs <= 0 || !this.sockets.size) cut();
    else setTimeout(cut, drainMs).unref();
  }

  /** A server whose connections go to the task `prefer` first (a lane), or to the next task in turn (null). */
  private makeServer(prefer: string | null): net.Server {
    const server = net.createServer({ pauseOnConnect: true, allowHalfOpen: true }, (client) => void this.accept(client, prefer));
    server.on('error', () => {});
    return server;
  }

  /** The lane of task `k`, listening on `host` and an ephemeral port (its address once it listens). */
  private openLane(k: string, host: string): Lane {
    const lane: Lane = { server: this.makeServer(k), address: null, retired: false, ready: false, probing: false };
    lane.server.listen(0, host, () => {
      if (this.closed || lane.retired) return void lane.server.close();
      const port = (lane.server.address() as net.AddressInfo).port;
      lane.address = { host, port, key: `${host}:${port}` };
    });
    return lane;
  }

  /** The tasks in the order one connection tries them: `prefer` first, then the others from the next in turn. */
  private order(list: Backend[], prefer: string | null): Backend[] {
    const start = list.length ? this.next++ % list.length : 0;
    const turn = [...list.slice(start), ...list.slice(0, start)];
    if (!prefer) return turn;
    return [...turn.filter((b) => keyOf(b) === prefer), ...turn.filter((b) => keyOf(b) !== prefer)];
  }

  private track(s: net.Socket): void {
    this.sockets.add(s);
    s.once('close', () => this.sockets.delete(s));
  }

  /**
   * One client connection: to the next task that accepts it (a lane's own task first). Until the task
   * sends its first byte, what the client sent is kept (up to REPLAY_MAX_BYTES): a task that closes the
   * connection at once without answering (it was being stopped by a rolling update: the engine's port
   * proxy accepts, then finds nothing behind it) is replaced by the next one, which gets the same bytes.
   */
  private async accept(client: net.Socket, prefer: string | null): Promise<void> {
    client.on('error', () => {});
    this.track(client);
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let replayable = true;
    let answered = false;
    let clientEnded = false;
    let upstream: net.Socket | null = null;
    client.on('data', (c: Buffer) => {
      if (!answered) {
        keptBytes += c.length;
        if (keptBytes <= REPLAY_MAX_BYTES) kept.push(c);
        else replayable = false;
      }
      const up = upstream;
      if (up && !up.destroyed && !up.write(c)) {
        client.pause();
        up.once('drain', () => client.resume());
      }
    });
    client.on('end', () => {
      clientEnded = true;
      upstream?.end();
    });
    client.once('close', () => upstream?.destroy());

    const deadline = Date.now() + CONNECT_BUDGET_MS;
    let delay = 50;
    // Tasks that closed this connection without answering: tried last from then on.
    const gone = new Set<string>();
    while (!client.destroyed && !this.closed && Date.now() < deadline) {
      let retry = false;
      const order = this.order(this.backends(), prefer);
      for (const b of [...order.filter((o) => !gone.has(keyOf(o))), ...order.filter((o) => gone.has(keyOf(o)))]) {
        if (client.destroyed) break;
        const up = await connect(b, Math.min(CONNECT_TIMEOUT_MS, Math.max(100, deadline - Date.now())));
        if (!up) continue;
        if (client.destroyed) return void up.destroy();
        const outcome = await this.relay(client, up, b, kept, clientEnded, (u) => (upstream = u), () => (answered = true));
        if (outcome === 'done') return;
        if (!replayable || client.destroyed) return void client.destroy();
        gone.add(keyOf(b));
        retry = true;
        break;
      }
      if (retry) continue;
      await Promise.race([this.refresh().catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(500, delay * 2);
    }
    client.destroy();
  }

  /**
   * Relays between the client and one task until the task's side closes: `retry` when it closed within
   * RETRY_WINDOW_MS without a byte of answer, or when the request may be sent twice and the task closed
   * without one or left the running list and sent none for LEFT_TASK_ANSWER_MS; `done` otherwise (the
   * client's side is then ended).
   */
  private relay(
    client: net.Socket,
    up: net.Socket,
    backend: Backend,
    kept: Buffer[],
    clientEnded: boolean,
    setUpstream: (u: net.Socket | null) => void,
    setAnswered: () => void,
  ): Promise<'done' | 'retry'> {
    return new Promise((resolve) => {
      this.track(up);
      const at = Date.now();
      let answered = false;
      let settled = false;
      const settle = (outcome: 'done' | 'retry') => {
        if (settled) return;
        settled = true;
        clearInterval(watchdog);
        resolve(outcome);
      };
      // A task the engine is stopping may hold the connection without answering: a request that may be
      // sent twice goes to another task once this one has left the list and still said nothing.
      const watchdog = setInterval(() => {
        if (answered || !mayResend(kept) || Date.now() - at < LEFT_TASK_ANSWER_MS) return;
        if (this.backends().some((o) => keyOf(o) === keyOf(backend))) return;
        setUpstream(null);
        up.removeAllListeners('data');
        up.destroy();
        settle('retry');
      }, LEFT_TASK_CHECK_MS);
      watchdog.unref();
      up.on('error', () => {});
      for (const c of kept) up.write(c);
      if (clientEnded) up.end();
      setUpstream(up);
      client.resume();
      up.on('data', (c: Buffer) => {
        if (!answered) {
          answered = true;
          kept.length = 0;
          setAnswered();
        }
        if (!client.write(c)) {
          up.pause();
          client.once('drain', () => up.resume());
        }
      });
      up.on('end', () => {
        // The task ended its side: after an answer the client's side ends too; without one the
        // connection is over (half-open it would hold the client until its timeout), and 'close' decides.
        if (answered) client.end();
        else up.destroy();
      });
      up.once('close', (hadError: boolean) => {
        if (settled) return;
        setUpstream(null);
        if (!answered && (Date.now() - at < RETRY_WINDOW_MS || mayResend(kept))) return settle('retry');
        // A task that broke off mid-answer: the client sees a reset, not a short answer.
        if (hadError) client.destroy();
        else client.end();
        settle('done');
      });
    });
  }
}

/**
 * Whether the bytes kept of a connection are the start of an HTTP request that may be sent twice: its
 * method is not POST, PATCH or LOCK (the methods nginx never passes to a next server). Anything else
 * (not HTTP, an unknown first line, nothing yet) is not resent after RETRY_WINDOW_MS.
 */
export function mayResend(kept: readonly Buffer[]): boolean {
  if (!kept.length) return false;
  const head = Buffer.concat(kept.length > 1 ? kept.slice(0, 2) : kept).subarray(0, 16).toString('latin1');
  const m = /^([A-Z]{3,7}) /.exec(head);
  return !!m && ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'].includes(m[1]!);
}

/** A connected socket to `b`, or null when it refuses, fails or does not answer within `timeoutMs`. */
function connect(b: Backend, timeoutMs: number): Promise<net.Socket | null> {
  return new Promise((resolve) => {
    const s = net.connect({ host: b.host, port: b.port, allowHalfOpen: true });
    const timer = setTimeout(() => {
      s.destroy();
      resolve(null);
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(timer);
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', () => {
      clearTimeout(timer);
      s.destroy();
      resolve(null);
    });
  });
}
