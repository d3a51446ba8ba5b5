/** The docker provider: a Dockerfile says how to build and run, and wins over every other provider. */
import { detection, type Detection, type Provider } from '../plan.js';

export const dockerProvider: Provider = {
  name: 'docker',
  detect: (f) => f.hasFile('Dockerfile'),
  plan(f): Detection {
    const expose = /^\s*EXPOSE\s+(\d{1,5})/im.exec(f.read('Dockerfile') ?? '');
    return detection('docker', { programs: [], port: expose ? Number(expose[1]) : 3000 });
  },
};
