import { useEffect, useRef, useState } from 'react';
import type { StreamState } from '../api/sse';

export interface LogLine {
  ts: string;
  stream?: string;
  line: string;
}

/**
 * A log that follows its tail while the user is at the bottom, and stops following when they
 * scroll up (a "Follow" button brings it back). Keeps at most `max` lines in the page.
 */
export function LogView({ lines, state, max = 5000, label = 'Log' }: { lines: LogLine[]; state?: StreamState; max?: number; label?: string }) {
  const ref = useRef<HTMLPreElement>(null);
  const [follow, setFollow] = useState(true);
  useEffect(() => {
    const el = ref.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);
  const shown = lines.length > max ? lines.slice(lines.length - max) : lines;
  return (
    <div className="log">
      <div className="log-bar">
        <span>{label}</span>
        {state ? <span className={`live live-${state}`}>{state === 'open' ? 'live' : state}</span> : null}
        {!follow ? (
          <button type="button" className="btn btn-small btn-ghost" onClick={() => setFollow(true)}>
            Follow
          </button>
        ) : null}
      </div>
      <pre
        ref={ref}
        className="log-body"
        tabIndex={0}
        aria-label={label}
        onScroll={(e) => {
          const el = e.currentTarget;
          setFollow(el.scrollHeight - el.scrollTop - el.clientHeight < 24);
        }}
      >
        {shown.length === 0 ? <span className="muted">No output yet.</span> : null}
        {shown.map((l, i) => (
          <div key={i} className={l.stream === 'stderr' ? 'log-line log-err' : 'log-line'}>
            {l.ts ? <><span className="log-ts">{l.ts.slice(11, 19)}</span> </> : null}{l.line}
          </div>
        ))}
      </pre>
    </div>
  );
}
