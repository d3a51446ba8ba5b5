import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, data, messageOf } from '../../api/client';
import { Button, ConfirmDialog, ErrorNotice, errorNames } from '../../ui/controls';
import { useToast } from '../../ui/toast';
import { servicesQuery } from '../services/api';
import { infoQuery } from './app-url';
import type { Project } from './settings-common';
import { TransferProgress, useBackgroundTransfer, type TransferRecord } from './transfer-live';

/** The projects list (the home page's cache entry): it holds each local record's `location`. */
const projectsQuery = { queryKey: ['projects'], queryFn: () => data(api.GET('/api/projects')) };

/**
 * Moving the project to the linked cloud and back (project admins; docs/cloud.md "Transfers").
 * Shown for a local project of a linked server, and for a project that lives on the cloud. The move
 * runs in the background on the server (`POST .../transfers`) and the card follows it live
 * (transfer-live.tsx): the step, the service whose data moves, its bytes and a bar. With managed
 * services, "Include the services' data" sends `includeData` (docs/services.md "Transfers"); an
 * error naming it (a stopped service: at once here, or on the cloud when the transfer fails) shows at
 * that checkbox, any other failure in the card. `id` is the local record's (the page's address): a
 * cloud project's own record, forwarded, may carry the cloud's.
 */
export function CloudTransfer({ id, project }: { id: string; project: Project }) {
  const qc = useQueryClient();
  const toast = useToast();
  const checkId = useId();
  const [includeData, setIncludeData] = useState(false);
  const [confirming, setConfirming] = useState(false);
  // The local record's location (GET /api/projects/:id of a cloud project answers the cloud's copy).
  const list = useQuery(projectsQuery);
  const onCloud = list.data?.find((p) => p.id === id)?.location === 'cloud';
  const info = useQuery({ ...infoQuery(id), enabled: list.isSuccess && !onCloud });
  const services = useQuery(servicesQuery(id));
  const managed = (services.data ?? []).filter((s) => s.managed);
  const move = useBackgroundTransfer(id, (t: TransferRecord) => {
    const result = t.result!;
    const moved = result.transferred.serviceData?.length ? ` with the data of ${result.transferred.serviceData.join(', ')}` : '';
    toast(result.location === 'cloud' ? `${project.name} moved to the cloud${moved}` : `${project.name} is back on this server${moved}`);
    setIncludeData(false);
    void qc.invalidateQueries({ queryKey: ['projects'] });
    void qc.invalidateQueries({ queryKey: ['project', id] });
    void qc.invalidateQueries({ queryKey: servicesQuery(id).queryKey });
  });
  if (!list.isSuccess || (!onCloud && !info.data?.cloud?.linked)) return null;
  const to = onCloud ? 'self-hosted' : 'cloud';
  const busy = move.starting || !!move.running;
  const dataError = errorNames(move.error, 'includeData');
  return (
    <section className="card" aria-labelledby="transfer-title">
      <h2 id="transfer-title">Cloud</h2>
      <p>
        {onCloud
          ? 'The project lives on the linked cloud. Bringing it back makes it here again with its settings, variables, domains, rules and services, then deletes the cloud copy.'
          : 'Move the project to the linked cloud: its settings, variables, domains, rules and services are copied and checked there, then the copy here stops.'}
      </p>
      {managed.length > 0 ? (
        <div className={`field${dataError ? ' field-invalid' : ''}`}>
          <label className="check" htmlFor={checkId}>
            <input
              id={checkId}
              type="checkbox"
              checked={includeData}
              disabled={busy}
              onChange={(e) => (move.reset(), setIncludeData(e.target.checked))}
              {...(dataError ? { 'aria-invalid': true, 'aria-describedby': `${checkId}-err` } : {})}
            />{' '}
            Include the services' data
          </label>
          {dataError ? (
            <p className="field-error" id={`${checkId}-err`} role="alert">
              {/* The API names its field (`without includeData`); here it is the checkbox. */}
              {messageOf(move.error).replace(/\bincludeData\b/g, `"Include the services' data"`)}
            </p>
          ) : (
            <p className="field-hint">
              A dump of {managed.map((s) => s.name).join(', ')} is loaded into the new instances on the other side; every service must be running. Without it they start empty.
            </p>
          )}
        </div>
      ) : null}
      {move.running ? <TransferProgress record={move.running} /> : null}
      <ErrorNotice error={move.error} {...(move.failed ? { title: 'The transfer failed' } : {})} fields={['includeData']} />
      <Button variant="primary" busy={busy} onClick={() => (move.reset(), setConfirming(true))}>
        {onCloud ? 'Bring back to this server' : 'Move to the cloud'}
      </Button>
      <ConfirmDialog
        open={confirming}
        danger={false}
        title={onCloud ? `Bring ${project.name} back to this server?` : `Move ${project.name} to the cloud?`}
        confirmLabel={onCloud ? 'Bring it back' : 'Move it'}
        busy={move.starting}
        onConfirm={() => move.start({ to, includeData: managed.length > 0 && includeData }, { onSettled: () => setConfirming(false) })}
        onCancel={() => setConfirming(false)}
      >
        <p>
          {onCloud
            ? 'The settings, variables, domains, rules and services of the cloud copy replace the ones here, and the cloud copy is deleted. Nothing runs here until the next deployment.'
            : 'Its settings, variables, domains, rules and services are copied to the cloud and checked there; then the app here goes offline and its services stop. Deployments, logs, backups and the volume\'s files do not move: nothing runs on the cloud until its first deployment there.'}{' '}
          {managed.length > 0
            ? includeData
              ? `The data of ${managed.map((s) => s.name).join(', ')} moves too.`
              : `The services (${managed.map((s) => s.name).join(', ')}) start empty on the other side.`
            : ''}
        </p>
      </ConfirmDialog>
    </section>
  );
}
