/**
 * The cpp provider: a folder with a `CMakeLists.txt` (CMake) or a `meson.build` (Meson), as Railpack
 * plans it (core/providers/cpp): configure with Ninja into a build folder, build, and run the
 * executable the build makes. CMake wins when a folder has both.
 *
 * Railpack builds into `/build` outside the app and starts `/build/<name of the app folder>`; a
 * host build has no such folder, so Berth builds into `build` inside the app folder (CMake's and
 * Meson's usual out-of-source folder) and starts the executable the project declares: the first
 * `add_executable(...)` of CMakeLists.txt (`${PROJECT_NAME}` read as `project(...)`'s name) or the
 * first `executable('...')` of meson.build, else the project's name. A release build
 * (`CMAKE_BUILD_TYPE=Release`, `--buildtype=release`), as a deployment wants.
 * Programs: `cmake` or `meson`, and `ninja`; the compiler is the build system's to find.
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';

const BUILD_DIR = 'build';

/** CMake source without `#` comments (bracket comments are rare in CMakeLists and left alone). */
const cmakeText = (text: string) => text.replace(/#[^\n]*/g, '');

/** A name Berth can put in a start command as one word. */
const safeName = (name: string | undefined): string | null => (name && /^[A-Za-z0-9][A-Za-z0-9._+-]*$/.test(name) ? name : null);

/** The executable a CMakeLists.txt builds: its first add_executable target, else the project's name. */
export function cmakeExecutable(text: string): string | null {
  const src = cmakeText(text);
  const project = /\bproject\s*\(\s*"?([A-Za-z0-9._+-]+)"?/i.exec(src)?.[1];
  for (const m of src.matchAll(/\badd_executable\s*\(\s*("?)([^\s")]+)\1([^)]*)\)/gi)) {
    // `add_executable(name IMPORTED)` and `add_executable(name ALIAS target)` build nothing.
    if (/\b(?:IMPORTED|ALIAS)\b/.test(m[3]!)) continue;
    const name = m[2]!.replace(/\$\{(?:PROJECT_NAME|CMAKE_PROJECT_NAME)\}/g, project ?? '');
    const safe = safeName(name);
    if (safe) return safe;
  }
  return safeName(project);
}

/** The executable a meson.build builds: its first executable(), else the project's name. */
export function mesonExecutable(text: string): string | null {
  const src = text.replace(/#[^\n]*/g, '');
  const exe = /\bexecutable\s*\(\s*'([^']+)'/.exec(src)?.[1];
  const project = /\bproject\s*\(\s*'([^']+)'/.exec(src)?.[1];
  return safeName(exe) ?? safeName(project);
}

export const cppProvider: Provider = {
  name: 'cpp',
  detect: (f) => f.hasFile('CMakeLists.txt') || f.hasFile('meson.build'),
  plan(f: Facts): Detection {
    if (f.hasFile('CMakeLists.txt')) {
      const exe = cmakeExecutable(f.read('CMakeLists.txt') ?? '');
      return detection('cpp', {
        packageManager: 'cmake',
        build: [`cmake -B ${BUILD_DIR} -G Ninja -DCMAKE_BUILD_TYPE=Release .`, `cmake --build ${BUILD_DIR}`],
        start: exe ? `./${BUILD_DIR}/${exe}` : null,
        outputDirectory: BUILD_DIR,
        programs: ['cmake', 'ninja'],
      });
    }
    const exe = mesonExecutable(f.read('meson.build') ?? '');
    return detection('cpp', {
      packageManager: 'meson',
      build: [`meson setup ${BUILD_DIR} --buildtype=release`, `meson compile -C ${BUILD_DIR}`],
      start: exe ? `./${BUILD_DIR}/${exe}` : null,
      outputDirectory: BUILD_DIR,
      programs: ['meson', 'ninja'],
    });
  },
};
