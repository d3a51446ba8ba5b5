import { useEffect, useState } from 'react';
import { duration, isActive, type Deployment } from './deploy-model';

/**
 * A deployment's duration: from its start to its finish, and while it runs from its start to now,
 * counting every second (the record itself does not change while a step runs silently).
 */
export function Duration({ d }: { d: Pick<Deployment, 'startedAt' | 'finishedAt' | 'createdAt' | 'status'> }) {
  const running = isActive(d) && !!d.startedAt && !d.finishedAt;
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!running) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [running]);
  return <span className="dep-duration">{duration(d, running ? now : Date.now())}</span>;
}
