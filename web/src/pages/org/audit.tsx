import { useInfiniteQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import type { PageProps } from '../../app';
import { api, call } from '../../api/client';
import { Button, EmptyState, ErrorNotice, Field, Select, Spinner } from '../../ui/controls';
import { PageHeader } from '../../ui/layout';
import { useSession } from '../../session';
import { RelTime, typeLabel, useMembers, useResourceLabel } from './org-api';
import './org.css';

const fetchPage = (limit: number, cursor?: string) => call(api.GET('/api/audit', { params: { query: { limit, ...(cursor ? { cursor } : {}) } } }));
type AuditEvent = Awaited<ReturnType<typeof fetchPage>>['data'][number];

const PAGE_SIZES = [25, 50, 100, 200];

/** A detail's value in words: names and ids only (the API never puts secrets there). */
function show(v: unknown, person: (id: string) => string | undefined, key: string): string {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'string') return (key === 'userId' && person(v)) || v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v.join(', ');
  if (Array.isArray(v)) {
    return v
      .map((x) => (x && typeof x === 'object' && 'resourceType' in x ? `${String(x.resourceType)} ${String((x as { resourceId?: unknown }).resourceId)}: ${[(x as { permissions?: unknown }).permissions].flat().join(', ')}` : JSON.stringify(x)))
      .join('; ');
  }
  return JSON.stringify(v);
}

function EventRow({ e, person, label }: { e: AuditEvent; person: (id: string) => string | undefined; label: (type: string, id: string) => string }) {
  const entries = Object.entries(e.details ?? {});
  const named = typeof e.details?.name === 'string' ? e.details.name : typeof e.details?.email === 'string' ? e.details.email : null;
  const subject =
    (e.resourceType === 'token' || e.resourceType === 'invitation') && named
      ? named
      : e.resourceType === 'membership' && e.resourceId
      ? person(e.resourceId) ?? e.resourceId
      : e.resourceId && (e.resourceType === 'project' || e.resourceType === 'backup_destination')
        ? label(e.resourceType, e.resourceId)
        : e.resourceId;
  return (
    <tr>
      <td data-label="When" className="nowrap">
        <span>
          <RelTime at={e.at} />
          <span className="sub">{new Date(e.at).toLocaleString()}</span>
        </span>
      </td>
      <td data-label="Who">{e.actorId ? person(e.actorId) ?? <code>{e.actorId}</code> : <span className="muted">Berth</span>}</td>
      <td data-label="Action">
        <code>{e.action}</code>
      </td>
      <td data-label="On">
        <span>
          {typeLabel(e.resourceType)}
          {subject ? (
            <span className="sub" title={e.resourceId ?? undefined}>
              {subject}
            </span>
          ) : null}
        </span>
      </td>
      <td data-label="Details">
        {entries.length ? (
          <ul className="details">
            {entries.map(([k, v]) => (
              <li key={k}>
                <span className="k">{k}:</span> {k === 'resourceId' && typeof v === 'string' && typeof e.details.resourceType === 'string' ? label(e.details.resourceType, v) : show(v, person, k)}
              </li>
            ))}
          </ul>
        ) : (
          <span className="muted">–</span>
        )}
      </td>
    </tr>
  );
}

function AuditLog() {
  const me = useSession();
  const [limit, setLimit] = useState(50);
  const [action, setAction] = useState('');
  // Names for user ids: the member list is for owners and admins; others see ids.
  const members = useMembers(me.role === 'owner' || me.role === 'admin');
  const label = useResourceLabel();
  const person = (id: string) => {
    if (id === me.user.id) return `${me.user.name || me.user.email} (you)`;
    const m = members.data?.find((x) => x.userId === id);
    return m ? m.name || m.email : undefined;
  };
  const log = useInfiniteQuery({
    queryKey: ['org', 'audit', limit],
    queryFn: ({ pageParam }) => fetchPage(limit, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
  });
  const events = useMemo(() => log.data?.pages.flatMap((p) => p.data) ?? [], [log.data]);
  const actions = useMemo(() => [...new Set(events.map((e) => e.action))].sort(), [events]);
  const shown = action ? events.filter((e) => e.action === action) : events;
  return (
    <>
      <div className="filters">
        <Field label="Events per page">
          {(p) => (
            <Select {...p} value={limit} onChange={(e) => setLimit(Number(e.target.value))}>
              {PAGE_SIZES.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </Select>
          )}
        </Field>
        <Field label="Action" hint="Among the events loaded so far">
          {(p) => (
            <Select {...p} value={action} onChange={(e) => setAction(e.target.value)}>
              <option value="">Every action</option>
              {(action && !actions.includes(action) ? [...actions, action] : actions).map((a) => (
                <option key={a} value={a}>
                  {a}
                </option>
              ))}
            </Select>
          )}
        </Field>
      </div>
      {log.isPending ? (
        <Spinner label="Loading the audit log" />
      ) : log.error && !events.length ? (
        <ErrorNotice error={log.error} title="Could not load the audit log" />
      ) : !shown.length ? (
        <EmptyState title={events.length ? `No ${action} events among the ${events.length} loaded` : 'Nothing has happened yet'} />
      ) : (
        <div className="table-wrap">
          <table className="org-table">
            <caption className="sr-only">Audit log, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">On</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((e) => (
                <EventRow key={e.id} e={e} person={person} label={label} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {log.error && events.length ? <ErrorNotice error={log.error} title="Could not load more" /> : null}
      <div className="form-actions" style={{ marginTop: '1rem' }}>
        {log.hasNextPage ? (
          <Button onClick={() => void log.fetchNextPage()} busy={log.isFetchingNextPage}>
            Load more
          </Button>
        ) : events.length ? (
          <span className="muted">The beginning of the log: {events.length} events.</span>
        ) : null}
      </div>
    </>
  );
}

export default function AuditPage(_: PageProps) {
  const me = useSession();
  return (
    <>
      <PageHeader title="Audit log" sub={me.org ? `What was done in ${me.org.name}, newest first` : undefined} />
      <AuditLog />
    </>
  );
}
