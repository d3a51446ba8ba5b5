/**
 * The port the services area declares: a preview's instance seeded from production (`seedFrom`)
 * starts from the production service's last succeeded backup, which the backups area fetches.
 */
import type { AppContext } from '../../context.js';

export interface ServiceSeedPort {
  /**
   * Downloads the artifact of the last succeeded backup run of the managed service `serviceId` to
   * `file`, checked against its recorded sha256; answers the run's id, or null when it has none.
   */
  lastBackup(ctx: AppContext, service: { orgId: string; projectId: string; id: string }, file: string): Promise<{ runId: string } | null>;
}

declare module '../../ports.js' {
  interface Ports {
    /** The last backup of a managed service, for seeding a preview's instance (backups area). */
    serviceSeeds: ServiceSeedPort | null;
  }
}

export const SERVICES_PORTS = { serviceSeeds: 'one' } as const;
