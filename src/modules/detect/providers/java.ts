/** The java provider (not written yet: detects nothing). */
import { detection, type Detection, type Provider } from '../plan.js';

export const javaProvider: Provider = {
  name: 'java',
  detect: () => false,
  plan(): Detection {
    return detection('java');
  },
};
