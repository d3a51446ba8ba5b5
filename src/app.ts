import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyError } from 'fastify';
import { isDashboardRequest, serveDashboard } from './http/dashboard.js';
import { lazyChildLogger, lazyChildLoggerOf } from './http/lazy-child-logger.js';
import { newRequestId, randomString } from './lib/ids.js';
import { Keyring } from './lib/crypto.js';
import { createLogger } from './lib/logger.js';
import { publicUrlOf, resolveSecretKey, type Config } from './config.js';
import type { AppContext } from './context.js';
import { migrateToLatest, openDatabase, type Database } from './db/client.js';
import { AppError, ERROR_STATUS, type ErrorCode } from './lib/errors.js';
import type { ModuleDef, RouteInfo } from './http/route.js';
import { registerModules } from './http/register.js';
import { routeUpgrades } from './http/upgrade.js';
import { AccessEvents } from './authz/access-events.js';
import { PortBoard, type Ports } from './ports.js';
import type { AreaState } from './state.js';
import { clientErrorAnswer, ConnectionGuard } from './http/connection-guard.js';
import { parseTrustedProxies } from './lib/trusted-proxies.js';
import { describeAjvError, installValidators } from './http/validation.js';
import { JobQueue } from './jobs/queue.js';
import { LeaderLease, Scheduler } from './jobs/leader.js';
import { openBus } from './db/notify.js';
import { areaModules } from './modules/index.js';
import { metaModule } from './modules/meta/index.js';
import type { Logger } from 'pino';
import { systemClock, type Clock } from './lib/clock.js';
import type { UidRange } from './runtime/uid-range.js';

/** The tables whose writes the database announces on the bus (migration 024), as the code names them. */
const ANNOUNCED_TABLES = ['projects', 'domains', 'environments', 'routeRules', 'deployments'];

declare module 'fastify' {
  interface FastifyInstance {
    berth: {
      ctx: AppContext;
      routes: RouteInfo[];
      modules: ModuleDef[];
      database: Database;
      /** Starts the jobs worker, the scheduler and every module's background work. */
      startBackground(): Promise<void>;
      /** Compiles every route's validators and serialisers now (they compile on first request); how many. */
      compileAllSchemas(): number;
    };
  }
}

const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'VALIDATION_FAILED',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
};

/** The dot path of the first string (or key) holding a NUL character, or null. */
function findNul(v: unknown, path: string): string | null {
  if (typeof v === 'string') return v.includes('\u0000') ? path : null;
  if (v && typeof v === 'object') {
    for (const [k, child] of Object.entries(v)) {
      const p = path ? `${path}.${k}` : k;
      if (k.includes('\u0000')) return p;
      const hit = findNul(child, p);
      if (hit !== null) return hit;
    }
  }
  return null;
}


export interface BuildOptions {
  logger?: Logger;
  /** Extra modules (tests). */
  modules?: ModuleDef[];
  /** Ports replacing what the modules provide (tests' fakes). */
  ports?: Partial<Ports>;
  /** The clock services read (default the machine's; tests pass one they can move). */
  clock?: Clock;
  /** The sandbox uid range `berth serve` claimed for its data dir (src/server.ts); none in-process. */
  uidRange?: UidRange | null;
}

/** Builds the Fastify instance with every module registered; does not listen (tests use it). */
// Long on purpose: the server assembled in the order it must be (parsers, context, hooks, error handler,
// modules), one registration after another; split, the order would be spread over files.
export async function buildApp(config: Config, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const log = opts.logger ?? createLogger(config.logLevel);
  const keyring = new Keyring(resolveSecretKey(config), config.previousSecretKeys);
  const database = openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl, poolMax: config.pg.poolMax, preparePerConnection: config.pg.preparePerConnection, synchronousCommit: config.pg.synchronousCommit });
  try {
    await migrateToLatest(database.db);
  } catch (e) {
    await database.close();
    throw e;
  }

  const hardening = config.hardening;
  const trusted = parseTrustedProxies(hardening.trustedProxies);
  // Request logging ("incoming request", "request completed") is on at debug and trace only. Below
  // them Fastify gets no logger of its own: with one it adds and removes two listeners on every
  // response and reads the clock twice for a line it would not write (2-9 % of an authenticated
  // read's throughput: docs/benchmarks.md, 2026-12-02 03:40). Requests log through `req.log`
  // all the same: the child factory binds Berth's logger and the request's id (`app.log` is silent).
  const requestLogging = config.logLevel === 'debug' || config.logLevel === 'trace';
  const app = Fastify({
    // X-Forwarded-For is believed only from BERTH_TRUSTED_PROXIES (none by default): req.ip.
    trustProxy: trusted.size ? (address: string) => trusted.trusts(address) : false,
    // Headers must arrive within 30 s (checked every second); bodies are the ConnectionGuard's.
    http: { headersTimeout: hardening.api.headersTimeoutMs, connectionsCheckingInterval: Math.min(1000, hardening.api.headersTimeoutMs) },
    requestTimeout: 0,
    // Requests Node's parser refuses (malformed Content-Length, ...) get the JSON error envelope.
    clientErrorHandler: clientErrorAnswer,
    ...(requestLogging ? { loggerInstance: log as unknown as FastifyBaseLogger } : { logger: false }),
    logController: new LogController({ disableRequestLogging: !requestLogging }),
    // Cloud mode adopts a well-formed X-Request-Id sent by a linked self-hosted instance (docs/cloud.md).
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      if (config.mode === 'cloud' && typeof incoming === 'string' && /^req_[a-z0-9]{8,40}$/.test(incoming)) return incoming;
      return newRequestId();
    },
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { maxParamLength: 500 },
    // With request logging, Fastify's own logger (its req and res serializers); without, Berth's.
    childLoggerFactory: requestLogging ? lazyChildLogger : lazyChildLoggerOf(log as unknown as FastifyBaseLogger),
  });
  const compileAllSchemas = installValidators(app);
  const guard = new ConnectionGuard(app.server, {
    ...hardening.api,
    exempt: (address) => trusted.trusts(address),
    log,
  });

  // JSON bodies: the default secure parser (`__proto__` and `constructor.prototype` keys are refused),
  // and an empty body is no body rather than an error.
  const jsonParser = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    jsonParser(req, body as string, (err, parsed) => {
      if (err) return done(err, undefined);
      // PostgreSQL text cannot hold NUL; no field of ours has a use for it either.
      if (/\\u0000/i.test(body as string)) {
        const field = findNul(parsed, '');
        if (field !== null) return done(new AppError('VALIDATION_FAILED', `${field || 'body'} must not contain NUL characters`, { field: field || undefined }), undefined);
      }
      done(null, parsed);
    });
  });

  const instanceId = `ins_${randomString(12)}`;
  // The notification bus (LISTEN/NOTIFY on PostgreSQL, in-process on SQLite): wired below to the
  // access events, the job queue and (by the modules) caches and streams.
  const bus = openBus({ db: database.db, databaseUrl: config.databaseUrl, instanceId, log });
  await bus.start();
  // A request that wrote a table other instances cache (the database announces such writes at commit,
  // migration 024) answers once they have heard: it sends a held message after its writes, which each
  // instance acknowledges after the database's announcement (a listener hears messages in commit order).
  const writesSeen = { n: 0 };
  const writesAtStart = new WeakMap<object, number>();
  if (bus.shared) database.writes.on(ANNOUNCED_TABLES, () => writesSeen.n++);
  const jobs = new JobQueue(database.db, database.dialect, instanceId, log, { clock: opts.clock ?? systemClock });
  bus.subscribe('jobs', () => jobs.wake());
  bus.onResync(() => jobs.wake());
  const scheduler = new Scheduler(new LeaderLease(database.db, 'scheduler', instanceId, log, config.instance.leaderTtlMs), log);
  const access = new AccessEvents();
  access.relay(bus);
  const board = new PortBoard();
  const ctx: AppContext = {
    config,
    db: database.db,
    dialect: database.dialect,
    writes: database.writes,
    keyring,
    log,
    clock: opts.clock ?? systemClock,
    uidRange: opts.uidRange ?? null,
    jobs,
    scheduler,
    instanceId,
    bus,
    access,
    ports: board.ports,
    state: {} as AreaState,
    publicUrl() {
      const addr = app.server.address();
      const port = addr && typeof addr === 'object' ? addr.port : config.port;
      return publicUrlOf(config, port);
    },
  };

  // While shutting down, idle keep-alive connections are closed as soon as they go idle, so a
  // SIGTERM drain ends with the last in-flight request instead of waiting out keep-alive timeouts.
  let idleSweep: NodeJS.Timeout | undefined;
  app.addHook('preClose', (done) => {
    app.server.closeIdleConnections();
    idleSweep = setInterval(() => app.server.closeIdleConnections(), 50);
    idleSweep.unref();
    done();
  });
  app.addHook('onClose', (_app, done) => {
    clearInterval(idleSweep);
    guard.stop();
    done();
  });
  // Callback style: cheaper than an async hook on every request.
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    // A NUL in a path or query value can reach neither PostgreSQL text nor a file name.
    if (req.url.includes('%00')) return done(new AppError('VALIDATION_FAILED', 'the URL must not contain NUL characters'));
    if (bus.shared && req.method !== 'GET' && req.method !== 'HEAD') writesAtStart.set(req, writesSeen.n);
    done();
  });
  // A change a request announces on the bus (a revoked token), or a write to a table other instances
  // cache, reaches them before its answer is sent, so that a client's next request reaches no
  // instance that has not heard of it. Only where there are others (PostgreSQL): on SQLite the bus is
  // this process, delivery is synchronous, and no request pays for the hook.
  if (bus.shared) {
    app.addHook('onSend', (req, _reply, payload, done) => {
      const before = writesAtStart.get(req);
      if (before !== undefined && before !== writesSeen.n) void bus.publish('written', null, { hold: true }).catch(() => {});
      const pending = bus.pending();
      if (!pending) return done(null, payload);
      pending.then(
        () => done(null, payload),
        () => done(null, payload),
      );
    });
  }

  app.setErrorHandler((err: FastifyError | AppError, req, reply) => {
    let status: number;
    let code: ErrorCode;
    let message: string;
    let field: string | undefined;
    if (err instanceof AppError) {
      status = err.status;
      code = err.code;
      message = err.message;
      field = err.field;
      if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
      if (err.headers) reply.headers(err.headers);
    } else if ((err as FastifyError).validation) {
      const e = err as FastifyError;
      const first = e.validation![0]!;
      const d = describeAjvError(first as never, e.validationContext);
      status = 400;
      code = 'VALIDATION_FAILED';
      message = d.message;
      field = d.field;
    } else if ((err as FastifyError).statusCode && (err as FastifyError).statusCode! < 500) {
      const e = err as FastifyError;
      status = e.statusCode!;
      code = STATUS_CODES[status] ?? 'VALIDATION_FAILED';
      if (!STATUS_CODES[status]) status = ERROR_STATUS[code];
      message =
        e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
          ? `unsupported content type ${req.headers['content-type'] ?? '(none)'}`
          : e.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
            ? 'request body is too large'
            : e.message.replace(/^FST_\w+:?\s*/, '');
      if (status === 429) reply.header('retry-after', reply.getHeader('retry-after') ?? '60');
    } else {
      req.log.error({ err }, 'unhandled error');
      status = 500;
      code = 'INTERNAL';
      message = 'internal error; the request id ties it to the server log';
    }
    if (reply.sent || reply.raw.headersSent) return;
    reply
      .code(status)
      .type('application/json')
      .send({ error: { code, message, ...(field ? { field } : {}), requestId: req.id } });
  });

  app.setNotFoundHandler((req, reply) => {
    // Outside /api, a GET is the dashboard's: a page of the single-page app or one of its files.
    if (isDashboardRequest(req)) return serveDashboard(config.dashboardDir, req, reply);
    reply.code(404).send({ error: { code: 'NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0]}`, requestId: req.id } });
  });

  const modules: ModuleDef[] = [];
  modules.push(metaModule(() => modules), ...areaModules, ...(opts.modules ?? []));
  // Ports and state first, so that `init` can use them: every module's declared ports (empty), its
  // per-server state (`ctx.state.<area>`), the ports it provides, then the caller's replacements.
  for (const m of modules) if (m.declares) board.declare(m.name, m.declares);
  for (const m of modules) {
    for (const [key, value] of Object.entries(m.state?.(ctx) ?? {})) {
      if (key in ctx.state) throw new Error(`ctx.state.${key} is made by two modules, the second ${m.name}`);
      (ctx.state as unknown as Record<string, unknown>)[key] = value;
    }
  }
  for (const m of modules) if (m.provides) board.provide(m.name, m.provides(ctx));
  if (opts.ports) board.provide('the caller (tests)', opts.ports);
  for (const m of modules) await m.init?.(ctx);
  const routes = registerModules(app, ctx, modules);
  // HTTP Upgrade requests (the services' tunnel) go through the same routes and gates.
  routeUpgrades(app);

  let started = false;
  app.decorate('berth', {
    ctx,
    routes,
    modules,
    database,
    compileAllSchemas,
    async startBackground() {
      if (started) return;
      started = true;
      jobs.start();
      scheduler.start();
      for (const m of modules) await m.start?.(ctx);
    },
  });

  app.addHook('onClose', async () => {
    if (started) {
      for (const m of [...modules].reverse()) await m.stop?.(ctx);
      await scheduler.stop();
      await jobs.stop();
    }
    await bus.close();
    await database.close();
  });

  return app;
}
