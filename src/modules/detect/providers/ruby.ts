/** The ruby provider (not written yet: detects nothing). */
import { detection, type Detection, type Provider } from '../plan.js';

export const rubyProvider: Provider = {
  name: 'ruby',
  detect: () => false,
  plan(): Detection {
    return detection('ruby');
  },
};
