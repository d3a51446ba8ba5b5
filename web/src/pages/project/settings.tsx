import type { PageProps } from '../../app';
import { Spinner } from '../../ui/controls';
import { BuildSettings } from './settings-build';
import { DangerZone, ProjectStatus } from './settings-danger';
import { ResourcesSettings } from './settings-resources';
import { useProject } from './shell';
import './settings.css';

/** Build settings, resources, sleep mode, status and deletion of a project. */
export default function SettingsPage({ params }: PageProps) {
  const project = useProject(params.id!);
  if (!project.data) return <Spinner />;
  const p = project.data;
  return (
    <div className="settings-page">
      <BuildSettings key={p.updatedAt} project={p} />
      <ResourcesSettings project={p} />
      <ProjectStatus project={p} />
      <DangerZone project={p} />
    </div>
  );
}
