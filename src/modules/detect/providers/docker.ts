/**
 * The docker provider: a Dockerfile says how to build and run a folder no language provider claims
 * (providers/index.ts says where it stands, and when a project builds its Dockerfile anyway). The
 * plan has no install, build or start (the image's own steps and CMD apply); the port is the
 * Dockerfile's first `EXPOSE` (3000 when it exposes none).
 */
import { detection, type Detection, type Provider } from '../plan.js';

/** The first port a Dockerfile exposes (`EXPOSE 8080`, `EXPOSE 8080/tcp 9090`), or null. */
export function exposedPort(dockerfile: string): number | null {
  for (const line of dockerfile.split('\n')) {
    const m = /^\s*EXPOSE\s+(\d{1,5})(?:\/(?:tcp|udp))?(?:\s|$)/i.exec(line);
    if (!m) continue;
    const n = Number(m[1]);
    if (n >= 1 && n <= 65535) return n;
  }
  return null;
}

export const dockerProvider: Provider = {
  name: 'docker',
  detect: (f) => f.hasFile('Dockerfile'),
  plan(f): Detection {
    return detection('docker', { programs: [], port: exposedPort(f.read('Dockerfile') ?? '') ?? 3000 });
  },
};
