import { createHash } from 'node:crypto';
import { defineRoute, type ModuleDef } from '../../src/http/route.js';
import { IdParams } from '../../src/http/schemas.js';
import { openSse, type SseWriter } from '../../src/http/sse.js';

/**
 * A per-project test module loaded on both servers of the cloud tests. On the cloud it stands in
 * for a streaming upload route and a live event stream, and records what reached it, so that the
 * tests can see forwarding from the other end:
 * - `POST /api/projects/:id/probe/upload` reads the raw request stream as it arrives (from the
 *   module's `forward` hook, before any parsing), counts and hashes it, and answers both;
 * - `GET /api/projects/:id/probe/events` is an SSE stream whose events the test pushes.
 * It can also make the cloud's export fail once (to break a transfer after its import).
 */
export interface ProbeState {
  hits: number;
  lastRequestId?: string;
  lastAuthorization?: string;
  firstChunkSeen?: () => void;
  firstChunk: Promise<void>;
  streams: SseWriter[];
  failNextExport: boolean;
}

export function probeState(): ProbeState {
  const s: Partial<ProbeState> = { hits: 0, streams: [], failNextExport: false };
  s.firstChunk = new Promise<void>((resolve) => (s.firstChunkSeen = resolve));
  return s as ProbeState;
}

export function resetFirstChunk(s: ProbeState): void {
  s.firstChunk = new Promise<void>((resolve) => (s.firstChunkSeen = resolve));
}

export function probeModule(state: ProbeState): ModuleDef {
  const project = { kind: 'project', param: 'id' } as const;
  const uploadDef = defineRoute({
    method: 'POST',
    url: '/api/projects/:id/probe/upload',
    summary: 'test probe: streaming upload',
    tag: 'project:write',
    resource: project,
    schema: { params: IdParams },
    handler: () => ({ unreachable: true }),
  });
  return {
    name: 'probe',
    routes: [
      uploadDef,
      defineRoute({
        method: 'GET',
        url: '/api/projects/:id/probe/events',
        summary: 'test probe: event stream',
        tag: 'project:read',
        resource: project,
        raw: true,
        schema: { params: IdParams },
        handler: ({ reply, req }) => {
          state.hits++;
          state.lastRequestId = req.id;
          const sse = openSse(reply, { requestId: req.id, heartbeatMs: 60_000 });
          state.streams.push(sse);
          sse.send('hello', { projectId: (req.params as { id: string }).id });
        },
      }),
    ],
    async forward(def, req, reply, ctx) {
      if (ctx.config.mode !== 'cloud') return false;
      if (def.method === 'POST' && def.url === '/api/projects/:id/export' && state.failNextExport) {
        state.failNextExport = false;
        reply.code(500).send({ error: { code: 'INTERNAL', message: 'probe: export made to fail', requestId: req.id } });
        return true;
      }
      if (def !== uploadDef) return false;
      state.hits++;
      state.lastRequestId = req.id;
      state.lastAuthorization = req.headers.authorization;
      reply.hijack();
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const chunk of req.raw) {
        if (bytes === 0) state.firstChunkSeen?.();
        bytes += (chunk as Buffer).length;
        hash.update(chunk as Buffer);
      }
      const body = JSON.stringify({ data: { bytes, sha256: hash.digest('hex'), projectId: (req.params as { id: string }).id, contentType: req.headers['content-type'] } });
      reply.raw.writeHead(201, { 'content-type': 'application/json', 'x-probe': 'cloud', 'x-request-id': req.id });
      reply.raw.end(body);
      return true;
    },
  };
}
