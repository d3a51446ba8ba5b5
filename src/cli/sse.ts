import type { ApiClient } from './client.js';

/**
 * Reads a Server-Sent Events response body and calls `onEvent` per frame (comments, such as the
 * heartbeat, are skipped); `onEvent` answering false stops reading. Resolves when the stream ends.
 */
export async function readSse(body: ReadableStream<Uint8Array>, onEvent: (event: string, data: string, id?: string) => void | boolean): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let sep: number;
    while ((sep = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, sep);
      buf = buf.slice(sep + 2);
      let event = 'message';
      let id: string | undefined;
      const data: string[] = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith(':')) continue;
        const i = line.indexOf(':');
        const field = i < 0 ? line : line.slice(0, i);
        const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
        if (field === 'event') event = val;
        else if (field === 'data') data.push(val);
        else if (field === 'id') id = val;
      }
      if (data.length && onEvent(event, data.join('\n'), id) === false) {
        await reader.cancel();
        return;
      }
    }
  }
}

/** Opens `url` on the server as an SSE stream (with the client's credential) and reads it to its end. */
export async function followSse(client: ApiClient, url: string, onEvent: (event: string, data: any) => void | boolean, signal?: AbortSignal): Promise<void> {
  const body = await client.stream(url, signal);
  await readSse(body, (event, data) => {
    let parsed: unknown = data;
    try {
      parsed = JSON.parse(data);
    } catch {
      /* not JSON: hand the text over */
    }
    return onEvent(event, parsed);
  });
}
