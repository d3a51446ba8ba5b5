import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

type LogMethod = (...args: unknown[]) => void;
type Level = FastifyBaseLogger['level'];
type ChildFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>;
type Bindings = Parameters<FastifyBaseLogger['child']>[0];
type ChildOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>;

/**
 * Fastify gives every request a child logger bound to its id. pino's child() serialises that binding
 * through the redaction paths and rebuilds the child's level methods: a few microseconds on every
 * request, for a logger that most requests never write to (request logging is off below debug).
 * This one makes the same child on first use.
 */
class LazyChildLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly opts: ChildOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.opts));
  }

  private log(name: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent', args: unknown[]): void {
    const real = this.real;
    (real[name] as LogMethod).apply(real, args);
  }

  get level(): Level {
    return this.made ? this.made.level : ((this.opts.level as Level | undefined) ?? this.parent.level);
  }
  set level(level: Level) {
    this.real.level = level;
  }
  fatal(...args: unknown[]): void {
    this.log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.log('error', args);
  }
  warn(...args: unknown[]): void {
    this.log('warn', args);
  }
  info(...args: unknown[]): void {
    this.log('info', args);
  }
  debug(...args: unknown[]): void {
    this.log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.log('trace', args);
  }
  silent(...args: unknown[]): void {
    this.log('silent', args);
  }
  child(...args: Parameters<FastifyBaseLogger['child']>): FastifyBaseLogger {
    return this.real.child(...args);
  }
}

export const lazyChildLogger: ChildFactory = (logger, bindings, opts) => new LazyChildLogger(logger, bindings, opts) as unknown as FastifyBaseLogger;

/** The same, with children of `parent` whatever logger Fastify holds (none when request logging is off: src/app.ts). */
export const lazyChildLoggerOf =
  (parent: FastifyBaseLogger): ChildFactory =>
  (_logger, bindings, opts) =>
    new LazyChildLogger(parent, bindings, opts) as unknown as FastifyBaseLogger;
