/**
 * The detect area's surface: what a source tree is (runtime, framework, the build plan), read from
 * its files without running anything. Uploads and imports call `scanProject`; the build calls
 * `planBuild` on the fetched source (and `sourceRootDirectory` for the app folder its berth.json names).
 */
export { scanProject, type ScanResult } from './scan.js';
export { planBuild } from './build-plan.js';
export { sourceRootDirectory } from './providers/berth-config.js';
export type { BuildPlan, Detection, Runtime } from './plan.js';
