/** Detection's shared constants. */

/** Folders never read by the scan (dependencies, VCS, build output, caches). */
export const IGNORED_DIRS = new Set(['node_modules', '.git', '.hg', '.svn', '.next', '.nuxt', '.output', '.svelte-kit', '.turbo', '.cache', 'dist', 'build', '__pycache__', '.venv', 'venv', '.tox', 'vendor', 'target', 'coverage']);
