/** The gleam provider (not written yet: detects nothing). */
import { detection, type Detection, type Provider } from '../plan.js';

export const gleamProvider: Provider = {
  name: 'gleam',
  detect: () => false,
  plan(): Detection {
    return detection('gleam');
  },
};
