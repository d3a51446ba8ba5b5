import { useMutation, useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { api, ApiError, data } from '../../api/client';
import { useEventStream } from '../../api/sse';
import { LiveProgress } from '../../ui/live-progress';

/** Starts a background transfer (docs/cloud.md "Transfers in the background"): 202 with its record. */
const startTransfer = (id: string, to: 'cloud' | 'self-hosted', includeData: boolean) =>
  data(api.POST('/api/projects/{id}/transfers', { params: { path: { id } }, body: { to, includeData } }));

export type TransferRecord = Awaited<ReturnType<typeof startTransfer>>;
type Progress = NonNullable<TransferRecord['progress']>;

/** A failed record's error as the API error its synchronous route would have answered (a field shows at its control). */
function recordError(r: TransferRecord): ApiError {
  const e = r.error ?? { code: 'INTERNAL', message: 'the transfer failed' };
  return new ApiError(e.code === 'CONFLICT' ? 409 : e.code === 'NOT_FOUND' ? 404 : 500, e.code, e.message, e.field);
}

/**
 * A transfer of the project run in the background and followed live: `start` POSTs it (what the server
 * refuses at once, e.g. a stopped service's 409 naming includeData, is `error` at once), then its events
 * (`snapshot`, `progress`, `complete`) keep `record` current. Should the stream drop before `complete`,
 * the record is read every few seconds instead. `onSucceeded` runs once with a succeeded record; a
 * failed one's error is `error` (and `failed` is set: the refusals of the start leave it unset). Nothing survives a reload (the card starts afresh; the server's 409 says
 * a transfer is still running).
 */
export function useBackgroundTransfer(id: string, onSucceeded: (r: TransferRecord) => void) {
  const [record, setRecord] = useState<TransferRecord | null>(null);
  const settled = useRef<string | null>(null);
  const done = useRef(onSucceeded);
  done.current = onSucceeded;
  const start = useMutation({
    mutationFn: ({ to, includeData }: { to: 'cloud' | 'self-hosted'; includeData: boolean }) => startTransfer(id, to, includeData),
    onMutate: () => setRecord(null),
    onSuccess: (r) => setRecord(r),
  });
  const running = record?.status === 'running' ? record : null;
  const url = running ? `/api/projects/${encodeURIComponent(id)}/transfers/${encodeURIComponent(running.id)}/events` : null;
  const live = useEventStream(url, {
    snapshot: (r: TransferRecord) => setRecord(r),
    progress: (p: Progress) => setRecord((r) => (r && r.status === 'running' ? { ...r, progress: p } : r)),
    complete: (r: TransferRecord) => setRecord(r),
  });
  // The fallback when the stream ended without `complete` (a proxy cut it, the server restarted).
  const polled = useQuery({
    queryKey: ['transfer', id, running?.id],
    queryFn: () => data(api.GET('/api/projects/{id}/transfers/{transferId}', { params: { path: { id, transferId: running!.id } } })),
    enabled: !!running && live === 'closed',
    refetchInterval: 3000,
    retry: false,
  });
  useEffect(() => {
    if (polled.data && polled.data.status !== 'running') setRecord(polled.data);
  }, [polled.data]);
  useEffect(() => {
    if (record?.status === 'succeeded' && settled.current !== record.id) {
      settled.current = record.id;
      done.current(record);
    }
  }, [record]);
  const lost = running && polled.error ? polled.error : null;
  const failed = !!lost || record?.status === 'failed';
  const error = start.error ?? lost ?? (record?.status === 'failed' ? recordError(record) : null);
  const reset = () => {
    start.reset();
    if (record?.status !== 'running') setRecord(null);
  };
  return { start: start.mutate, starting: start.isPending, running, failed, error, reset };
}

/** What a phase of a service's data is doing, in words (the direction says which side does it). */
function phaseWords(p: Progress, toCloud: boolean): string {
  switch (p.phase) {
    case 'dump':
      return toCloud ? `Dumping ${p.service}` : `Dumping ${p.service} on the cloud`;
    case 'send':
      return `Sending the data of ${p.service} to the cloud`;
    case 'receive':
      return `Receiving the data of ${p.service} from the cloud`;
    case 'load':
      return toCloud ? `Loading the data of ${p.service} on the cloud` : `Loading the data of ${p.service} here`;
  }
}

/**
 * A running transfer in the card: the step in words in a polite live region (announced when the
 * phase or the service changes, not at each byte), then the bytes and a progress bar (a moving one
 * while the total is unknown).
 */
export function TransferProgress({ record }: { record: TransferRecord }) {
  const toCloud = record.direction === 'to-cloud';
  const p = record.progress;
  const step = p ? phaseWords(p, toCloud) : toCloud ? 'Copying the project to the cloud and checking it there' : 'Bringing the project back and checking it here';
  return (
    <div className="transfer-progress">
      <p role="status" aria-live="polite">
        {step}…
      </p>
      <LiveProgress label={step} figuresOnly {...(p ? { bytes: p.bytes } : {})} {...(p?.totalBytes !== undefined ? { total: p.totalBytes } : {})} />
    </div>
  );
}
