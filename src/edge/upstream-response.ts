import type http from 'node:http';
import type { Dispatcher } from 'undici';
import { HOP_BY_HOP } from './request-head.js';

/** The app answered with an error, or did not answer: `headersSent` says whether the client saw any of it. */
export type UpstreamDone = (status: number, bytes: number, err: Error | null, headersSent: boolean) => void;

/**
 * One proxied request's answer, as an undici dispatch handler (the edge's hot path): the app's status
 * and headers (hop-by-hop ones dropped) go to the client, its body is written through with backpressure
 * (the app's connection pauses while the client's is full), and `done` is called once, when the body is
 * written, or on an error. A client that goes away aborts the upstream request.
 *
 * One object per request and no stream in between: undici's `stream()` API, which the edge used before,
 * wraps each request in an AsyncResource, a factory call and an end-of-stream watcher, and the body bytes
 * were counted by wrapping `res.write`/`res.end`; here they are counted as they pass.
 */
export class UpstreamResponse implements Dispatcher.DispatchHandler {
  status = 502;
  /** Body bytes sent to the client: the app's Content-Length when it gave one (not for HEAD), else what passed. */
  bytes = 0;
  private controller: Dispatcher.DispatchController | null = null;
  private counting = true;
  private finished = false;
  /** The client closed the connection before the answer was written. */
  private gone = false;

  constructor(
    private readonly res: http.ServerResponse,
    private readonly head: boolean,
    private readonly done: UpstreamDone,
  ) {
    res.once('close', () => {
      if (res.writableFinished) return;
      this.gone = true;
      this.controller?.abort(new Error('the client closed the connection'));
    });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // The client left while the request waited for a connection to the app.
    if (this.gone) controller.abort(new Error('the client closed the connection'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.status = statusCode;
    const out: http.OutgoingHttpHeaders = {};
    for (const k in headers) if (!HOP_BY_HOP.has(k)) out[k] = headers[k];
    const len = headers['content-length'];
    if (!this.head && typeof len === 'string' && /^\d+$/.test(len)) {
      this.bytes = Number(len);
      this.counting = false;
    }
    this.res.writeHead(statusCode, out);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.counting) this.bytes += chunk.length;
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once('drain', () => controller.resume());
    }
  }

  onResponseEnd(): void {
    this.res.end();
    this.finish(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.finish(err);
  }

  private finish(err: Error | null): void {
    if (this.finished) return;
    this.finished = true;
    this.done(this.status, this.bytes, err, this.res.headersSent);
  }
}
