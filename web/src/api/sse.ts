import { useEffect, useRef, useState } from 'react';

export type StreamState = 'connecting' | 'open' | 'closed';

/**
 * Follows a Server-Sent Events stream of the API (same origin: the session cookie authenticates it,
 * or a `?token=` the caller put in the URL). `handlers` maps event names (those given when the url
 * is set) to callbacks with the parsed JSON data; the latest callbacks are used without
 * reconnecting. A null url follows nothing.
 *
 * The API's streams send their backlog first and close when they are done (a build log once the
 * build ended), so the browser's automatic reconnect would replay them: the hook closes the
 * EventSource on the first error instead and reports `closed`. A page that wants more opens the
 * stream again with a new url (a `since=` or a fresh token), which `key` forces for the same url.
 */
export function useEventStream(url: string | null, handlers: Record<string, (data: any) => void>, key = 0): StreamState {
  const ref = useRef(handlers);
  ref.current = handlers;
  const [state, setState] = useState<StreamState>('connecting');
  useEffect(() => {
    if (!url) {
      setState('closed');
      return;
    }
    setState('connecting');
    const es = new EventSource(url, { withCredentials: true });
    const seen = new Set<string>();
    const listen = (name: string) => {
      if (seen.has(name)) return;
      seen.add(name);
      es.addEventListener(name, (ev) => {
        let parsed: unknown = (ev as MessageEvent).data;
        try {
          parsed = JSON.parse((ev as MessageEvent).data);
        } catch {
          /* not JSON: pass the text */
        }
        ref.current[name]?.(parsed);
      });
    };
    for (const name of Object.keys(ref.current)) listen(name);
    es.onopen = () => setState('open');
    es.onerror = () => {
      es.close();
      setState('closed');
    };
    return () => {
      es.close();
      setState('closed');
    };
  }, [url, key]);
  return state;
}
