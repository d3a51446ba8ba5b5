/** The go provider: a go.mod (module) folder, built to one binary and run. */
import { detection, type Detection, type Provider } from '../plan.js';

export const goProvider: Provider = {
  name: 'go',
  detect: (f) => f.hasFile('go.mod'),
  plan(f): Detection {
    const d = detection('go', { packageManager: 'go', programs: ['go'], port: 8080 });
    const m = /^go\s+(\d+(?:\.\d+){0,2})/m.exec(f.read('go.mod') ?? '');
    if (m) d.version = { value: m[1]!, source: 'go.mod' };
    d.install = ['go mod download'];
    d.build = ['go build -o app .'];
    d.start = './app';
    return d;
  },
};
