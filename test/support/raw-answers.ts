import { randomBytes } from 'node:crypto';
import type net from 'node:net';

/**
 * A raw test app's large answer (the edge's backpressure tests): `size` random bytes with their
 * Content-Length, written at once; `socket()` is the app's connection that wrote it, once it has.
 */
export function largeAnswer(size: number): { body: Buffer; script: (path: string, socket: net.Socket) => void; socket: () => net.Socket | null } {
  const body = randomBytes(size);
  let written: net.Socket | null = null;
  return {
    body,
    script: (_path, socket) => {
      written = socket;
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: ${size}\r\n\r\n`);
      socket.write(body);
    },
    socket: () => written,
  };
}
