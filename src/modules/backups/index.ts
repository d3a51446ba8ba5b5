/**
 * The backups area's surface: the only file other areas import. Backup destinations, policies, runs
 * and restores of a project's services, to a local folder or an S3-compatible bucket.
 */
export { backupsModule } from './backups.module.js';
/** The test factories build destinations and policies through these (as the routes do). */
export { createDestination } from './destinations.service.js';
export { createPolicy } from './policies.service.js';
