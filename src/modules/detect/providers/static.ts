/** The static provider: a folder of files (`index.html`, or a `Staticfile` naming its root), served by the edge. */
import { detection, type Detection, type Provider } from '../plan.js';

export const staticProvider: Provider = {
  name: 'static',
  detect: (f) => f.hasFile('index.html') || f.hasFile('Staticfile'),
  plan(): Detection {
    return detection('static', { outputDirectory: '.', static: { outputDirectory: '.', spa: false } });
  },
};
