import type { PageProps } from '../../app';
import { useAccess } from '../../access';
import { Notice, Spinner } from '../../ui/controls';
import { BuildSettings } from './settings-build';
import { DangerZone, ProjectStatus } from './settings-danger';
import { ResourcesSettings } from './settings-resources';
import { CloudTransfer } from './settings-transfer';
import { useProject } from './shell';
import './settings.css';

/** Build settings, resources, sleep mode, status, the move to the cloud and back, and deletion of a project (the last two: project admins only). */
export default function SettingsPage({ params }: PageProps) {
  const project = useProject(params.id!);
  const access = useAccess();
  if (!project.data) return <Spinner />;
  const p = project.data;
  // The tab is left out without write on the project; reached by its address, the page says why.
  if (!access.project(p.id, 'write')) return <Notice kind="info">Your access to {p.name} does not include changing its settings. An admin of the organization can grant it.</Notice>;
  return (
    <div className="settings-page">
      <BuildSettings key={p.updatedAt} project={p} />
      <ResourcesSettings project={p} />
      <ProjectStatus project={p} />
      {access.project(params.id!, 'admin') ? <CloudTransfer id={params.id!} project={p} /> : null}
      {access.project(p.id, 'admin') ? <DangerZone project={p} /> : null}
    </div>
  );
}
