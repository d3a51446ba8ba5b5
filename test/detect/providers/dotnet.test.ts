import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

const WEB = (tf = 'net8.0', extra = '') => `<Project Sdk="Microsoft.NET.Sdk.Web">\n  <PropertyGroup>\n    <TargetFramework>${tf}</TargetFramework>${extra}\n  </PropertyGroup>\n</Project>\n`;

describe('dotnet provider', () => {
  const cases = casesOf('dotnet');
  it('has its two corpus cases', () => assert.equal(cases.length, 2, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does (restore, publish to out/)`, () => expectPlan(name));

  it('plans commands the runner accepts, ASPNETCORE_URLS as a leading assignment', () => {
    for (const name of cases) {
      const { plan } = scanProject(path.join(FIXTURES, name));
      for (const cmd of [...plan.install, ...plan.build]) assert.doesNotThrow(() => parseCommand(cmd), `${name}: ${cmd}`);
      const [start] = parseCommand(plan.start!, { PORT: '4321' });
      assert.equal(start?.env.ASPNETCORE_URLS, 'http://0.0.0.0:4321');
      assert.equal(start?.argv[0], 'dotnet');
    }
  });

  it('names the web project when the folder holds several', () => {
    const got = scanProject(app({ 'Lib.csproj': '<Project Sdk="Microsoft.NET.Sdk"></Project>', 'Site.csproj': WEB('net8.0', '<AssemblyName>site</AssemblyName>') }));
    assert.deepEqual(got.plan.install, ['dotnet restore Site.csproj']);
    assert.deepEqual(got.plan.build, ['dotnet publish Site.csproj --no-restore -c Release -o out']);
    assert.equal(got.plan.start, 'ASPNETCORE_URLS=http://0.0.0.0:${PORT:-8080} dotnet out/site.dll');
    assert.equal(got.framework, 'aspnet');
  });

  it('reads TargetFrameworks (the first), and lets mise win over global.json', () => {
    assert.equal(scanProject(app({ 'Api.csproj': WEB('x').replace('<TargetFramework>x</TargetFramework>', '<TargetFrameworks>net6.0;net8.0</TargetFrameworks>') })).plan.version, '6.0');
    assert.equal(scanProject(app({ 'Api.csproj': WEB(), 'global.json': '{"sdk":{"version":"8.0.204"}}' })).plan.version, '8.0.204');
    assert.equal(scanProject(app({ 'Api.csproj': WEB(), 'global.json': '{"sdk":{"version":"8.0.204"}}', '.tool-versions': 'dotnet 9.0.100\n' })).plan.version, '9.0.100');
  });

  it('plans a console project without a framework, and ignores a solution whose projects are missing or outside', () => {
    const console = scanProject(app({ 'Tool.csproj': '<Project Sdk="Microsoft.NET.Sdk"><PropertyGroup><TargetFramework>net8.0</TargetFramework></PropertyGroup></Project>' }));
    assert.equal(console.framework, null);
    assert.equal(console.plan.start, 'ASPNETCORE_URLS=http://0.0.0.0:${PORT:-8080} dotnet out/Tool.dll');
    const sln = 'Project("{X}") = "A", "..\\A\\A.csproj", "{1}"\nEndProject\nProject("{X}") = "B", "B\\B.csproj", "{2}"\nEndProject\n';
    // A.csproj exists beside the scanned folder, but a solution may not reach out of it.
    assert.equal(scanProject(path.join(app({ 'app/All.sln': sln, 'A/A.csproj': WEB() }), 'app')).runtime, 'unknown');
    assert.equal(scanProject(app({ 'All.sln': sln, 'B/B.csproj': WEB() })).plan.build[0], 'dotnet publish B/B.csproj --no-restore -c Release -o out');
  });
});
