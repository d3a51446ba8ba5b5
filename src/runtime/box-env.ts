/**
 * What glibc's loader and libc obey from the environment in a program that is not setuid: its list of
 * "unsecure" variables (`sysdeps/generic/unsecvars.h`, what it drops for a setuid program), and any name
 * with the prefixes it reads more of. The launcher's programs run as root and are not setuid, so none of
 * these may reach them: a project's `LD_PRELOAD=/app/x.so` would run its code as root inside the box
 * (in setpriv, before the uid switch), or on the host (in nsenter and bwrap) with a host path.
 */
const LOADER_VARIABLES = new Set(['GCONV_PATH', 'GETCONF_DIR', 'GLIBC_TUNABLES', 'HOSTALIASES', 'LOCALDOMAIN', 'LOCPATH', 'NIS_PATH', 'NLSPATH', 'RESOLV_HOST_CONF', 'RES_OPTIONS', 'TMPDIR', 'TZDIR']);
const LOADER_PREFIXES = ['LD_', 'GLIBC_', 'MALLOC_'];

/**
 * A box's environment, in two parts: bwrap's `--setenv` pairs (read from fd 4 like its other arguments:
 * the launcher itself starts with an empty environment, and no variable shows in a command line), and
 * the loader's variables as `NAME=value` words for coreutils' `env`, which the chain runs after setpriv
 * (or bwrap, without root): they act in the project's processes only. A name with `=` or a NUL, an
 * empty name, or a value with a NUL (it would end the word in fd 4 and start another argument) is refused.
 */
export function splitBoxEnv(env: Record<string, string>): { setenv: string[]; late: string[] } {
  const setenv: string[] = [];
  const late: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if (!k || /[=\0]/.test(k)) throw new Error(`environment variable name ${JSON.stringify(k)} is not valid (empty, or it has "=" or a NUL)`);
    if (v.includes('\0')) throw new Error(`environment variable ${k} has a NUL in its value`);
    if (LOADER_VARIABLES.has(k) || LOADER_PREFIXES.some((p) => k.startsWith(p))) late.push(`${k}=${v}`);
    else setenv.push('--setenv', k, v);
  }
  return { setenv, late };
}
