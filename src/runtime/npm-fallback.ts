/**
 * `npm ci` refuses a lockfile that does not match package.json (a dependency added to package.json
 * without `npm install`, a lock entry missing): npm exits with `EUSAGE` and says the two must be "in
 * sync". A planned `npm ci` then runs again as `npm install` (contract section 18), saying so.
 */

export const NPM_CI_FALLBACK_NOTE = 'npm ci refused the lockfile (it does not match package.json); running npm install instead';

/** Whether a failed `npm ci`'s output is npm refusing the lockfile (EUSAGE, "... are in sync"), not another failure. */
export function npmCiRefusedLockfile(output: string): boolean {
  return /\bEUSAGE\b/.test(output) && /can only install packages when your package\.json and package-lock\.json(?: or npm-shrinkwrap\.json)? are in sync/.test(output);
}

/** npm's names for `npm ci`. */
const CI_ALIASES = new Set(['ci', 'clean-install', 'ic', 'install-clean', 'isntall-clean']);

/** `npm ci <options>` as `npm install <options>`; null for any other command. */
export function npmInstallInstead(argv: readonly string[]): string[] | null {
  if (argv.length < 2 || argv[0] !== 'npm' || !CI_ALIASES.has(argv[1]!)) return null;
  return ['npm', 'install', ...argv.slice(2)];
}
