import type { Migration } from 'kysely';
import * as m001 from './001_foundation.js';
import * as m002 from './002_permissions.js';
import * as m003 from './003_projects.js';
import * as m004 from './004_uploads.js';
import * as m005 from './005_deployments.js';
import * as m006 from './006_gitprovider.js';
import * as m007 from './007_backups.js';
import * as m008 from './008_cloud.js';
import * as m009 from './009_restore_identity.js';
import * as m010 from './010_sandbox_identities.js';
import * as m011 from './011_stream_token_credential.js';
import * as m012 from './012_upload_stored_bytes.js';
import * as m013 from './013_static_sites.js';
import * as m014 from './014_current_releases.js';
import * as m016 from './016_images.js';
import * as m015 from './015_domain_verification.js';
import * as m017 from './017_certificates.js';
import * as m018 from './018_https_config.js';
import * as m019 from './019_acme_alpn.js';
import * as m020 from './020_instance_certificates.js';
import * as m021 from './021_drop_domain_tls.js';
import * as m022 from './022_preview_environments.js';
import * as m023 from './023_preview_pulls.js';
import * as m024 from './024_bus_triggers.js';
import * as m025 from './025_upload_in_flight.js';
import * as m026 from './026_app_owners.js';
import * as m027 from './027_env_revision_quiet.js';
import * as m028 from './028_certificate_renewal.js';
import * as m029 from './029_delivery_dedupe.js';
import * as m030 from './030_managed_services.js';
import * as m031 from './031_notifications.js';
import * as m032 from './032_metrics.js';
import * as m033 from './033_app_health.js';
import * as m034 from './034_backup_verify_restore.js';
import * as m035 from './035_service_environments.js';
import * as m036 from './036_metric_tiers.js';
import * as m040 from './040_certificate_expiry_notice.js';

/**
 * Every migration, in order. Names sort; add new ones at the end with the next number.
 * One set serves both SQLite and PostgreSQL.
 */
export const migrations: Record<string, Migration> = {
  '001_foundation': m001,
  '002_permissions': m002,
  '003_projects': m003,
  '004_uploads': m004,
  '005_deployments': m005,
  '006_gitprovider': m006,
  '007_backups': m007,
  '008_cloud': m008,
  '009_restore_identity': m009,
  '010_sandbox_identities': m010,
  '011_stream_token_credential': m011,
  '012_upload_stored_bytes': m012,
  '013_static_sites': m013,
  '014_current_releases': m014,
  '015_domain_verification': m015,
  '016_images': m016,
  '017_certificates': m017,
  '018_https_config': m018,
  '019_acme_alpn': m019,
  '020_instance_certificates': m020,
  '021_drop_domain_tls': m021,
  '022_preview_environments': m022,
  '023_preview_pulls': m023,
  '024_bus_triggers': m024,
  '025_upload_in_flight': m025,
  '026_app_owners': m026,
  '027_env_revision_quiet': m027,
  '028_certificate_renewal': m028,
  '029_delivery_dedupe': m029,
  '030_managed_services': m030,
  '031_notifications': m031,
  '032_metrics': m032,
  '033_app_health': m033,
  '034_backup_verify_restore': m034,
  '035_service_environments': m035,
  '036_metric_tiers': m036,
  '040_certificate_expiry_notice': m040,
};
