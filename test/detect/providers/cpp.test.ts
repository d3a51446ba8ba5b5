import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { planBuild } from '../../../src/modules/detect/build-plan.js';
import { cmakeExecutable, mesonExecutable } from '../../../src/modules/detect/providers/cpp.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

describe('cpp provider', () => {
  const cases = casesOf('cpp');
  it('has its two corpus cases (CMake, Meson)', () => assert.equal(cases.length, 2, cases.join(', ')));
  for (const name of cases) it(`plans ${name}: configure with Ninja into build/, build, run the executable`, () => expectPlan(name));

  it('plans commands the runner accepts, and needs the build system and ninja on the host', () => {
    for (const name of cases) {
      const d = planBuild(path.join(FIXTURES, name), path.join(FIXTURES, name));
      for (const cmd of [...d.build, d.start!]) assert.doesNotThrow(() => parseCommand(cmd), cmd);
    }
    assert.deepEqual(planBuild(path.join(FIXTURES, 'cpp-cmake'), path.join(FIXTURES, 'cpp-cmake')).programs, ['cmake', 'ninja']);
    assert.deepEqual(planBuild(path.join(FIXTURES, 'cpp-meson'), path.join(FIXTURES, 'cpp-meson')).programs, ['meson', 'ninja']);
  });

  it('starts the first executable CMake builds, with ${PROJECT_NAME} read; IMPORTED and ALIAS targets build nothing', () => {
    assert.equal(cmakeExecutable('project(api CXX)\nadd_executable(${PROJECT_NAME} main.cc)\n'), 'api');
    assert.equal(cmakeExecutable('project(api)\nadd_executable(tool IMPORTED)\nadd_executable(alias ALIAS x)\nadd_executable(server main.cc)\n'), 'server');
    assert.equal(cmakeExecutable('# add_executable(old main.cc)\nproject("named")\nadd_library(lib a.cc)\n'), 'named', 'the project name when no executable is declared');
    assert.equal(cmakeExecutable('add_library(lib a.cc)\n'), null);
  });

  it("starts Meson's first executable, else the project's name", () => {
    assert.equal(mesonExecutable("project('p', 'cpp')\nexecutable('srv', 'main.cc')\n"), 'srv');
    assert.equal(mesonExecutable("project('p', 'c')\n"), 'p');
  });

  it('prefers CMake when a folder has both, and has no start command when no executable name is safe to run', () => {
    const both = scanProject(app({ 'CMakeLists.txt': 'project(x)\nadd_executable(x main.cc)\n', 'meson.build': "project('y', 'cpp')\n" }));
    assert.equal(both.plan.start, './build/x');
    const unnamed = scanProject(app({ 'CMakeLists.txt': 'add_executable("a b" main.cc)\n' }));
    assert.equal(unnamed.runtime, 'cpp');
    assert.equal(unnamed.plan.start, undefined);
  });
});
