/**
 * The detect area's surface: what a source tree is (framework, build and start commands, port),
 * read from its files without running anything. Uploads and imports call `scanProject`.
 */
export { scanProject, type ScanResult } from './scan.js';
