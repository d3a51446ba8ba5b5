import { Readable } from 'node:stream';
import type { FastifyRequest, preParsingAsyncHookHandler } from 'fastify';
import { AppError } from '../lib/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The exact request bytes, on routes declared with `rawBody: true` (signed webhook deliveries). */
    rawBody?: Buffer;
  }
}

/**
 * A route-scoped preParsing hook: reads the body's exact bytes into `req.rawBody` (at most `limit`
 * bytes, else 413) and hands Fastify an empty body, so no parser re-serialises or alters them.
 */
export function rawBodyHook(limit: number): preParsingAsyncHookHandler {
  return async function (req: FastifyRequest, _reply, payload) {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of payload) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
      size += b.length;
      if (size > limit) throw new AppError('PAYLOAD_TOO_LARGE', 'request body is too large');
      chunks.push(b);
    }
    req.rawBody = Buffer.concat(chunks);
    const empty = Readable.from([]) as Readable & { receivedEncodedLength?: number };
    empty.receivedEncodedLength = size;
    return empty;
  };
}
