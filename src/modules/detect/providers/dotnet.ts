/**
 * The dotnet provider: a `*.csproj` in the folder (Railpack's test), or a `*.sln` whose projects
 * Berth reads to find the web project.
 *
 * - install: `dotnet restore`; build: `dotnet publish --no-restore -c Release -o out` (Railpack's
 *   commands). For a solution the project is named (`dotnet publish src/Web/Web.csproj ...`): the
 *   SDK refuses `-o` for a whole solution; so it is when the folder holds several project files.
 * - start: `ASPNETCORE_URLS=http://0.0.0.0:${PORT:-8080} dotnet out/<assembly>.dll`. Railpack runs
 *   the apphost `./out/<project>` with port 3000 as the default; Berth runs the dll through the
 *   `dotnet` host (no executable bit needed on the published file) and defaults to 8080, the port
 *   ASP.NET Core containers use since .NET 8. The assembly name is the project's `<AssemblyName>`,
 *   else the project file's name.
 * - version: mise.toml / .tool-versions, then global.json `sdk.version` (major.minor.patch), then
 *   the project's `TargetFramework` (`net8.0` → `8.0`), the order in which Railpack lets them win.
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { toolVersion, type Pin } from './versions.js';

interface Project {
  /** Path of the .csproj relative to the app folder. */
  file: string;
  text: string;
}

const baseName = (file: string): string => file.slice(file.lastIndexOf('/') + 1).replace(/\.csproj$/i, '');
const isWeb = (p: Project): boolean => /Sdk\s*=\s*"Microsoft\.NET\.Sdk\.Web"/i.test(p.text);

/** The projects a solution lists (`Project("{...}") = "Web", "src\Web\Web.csproj", "{...}"`), inside the folder. */
function solutionProjects(f: Facts): Project[] {
  const out: Project[] = [];
  for (const sln of f.matching(/\.sln$/i)) {
    for (const m of (f.read(sln) ?? '').matchAll(/^Project\("[^"]*"\)\s*=\s*"[^"]*",\s*"([^"]+\.csproj)"/gim)) {
      const file = m[1]!.replace(/\\/g, '/');
      if (file.startsWith('/') || file.split('/').some((s) => s === '..' || s === '')) continue;
      const text = f.read(file);
      if (text !== null) out.push({ file, text });
    }
  }
  return out;
}

/** The project to publish: the folder's own .csproj (a web one first), else the solution's web project. */
function mainProject(f: Facts): { project: Project; viaSolution: boolean } | null {
  const own = f.matching(/\.csproj$/i).map((file) => ({ file, text: f.read(file) ?? '' }));
  if (own.length) return { project: own.find(isWeb) ?? own[0]!, viaSolution: false };
  const listed = solutionProjects(f);
  const pick = listed.find(isWeb) ?? listed.find((p) => !/test/i.test(p.file)) ?? listed[0];
  return pick ? { project: pick, viaSolution: true } : null;
}

function version(f: Facts, project: Project | null): Pin | null {
  const mise = toolVersion(f, ['dotnet', 'dotnet-core']);
  if (mise) return mise;
  const sdk = f.json('global.json')?.sdk?.version;
  const m = typeof sdk === 'string' ? /^(\d+)\.(\d+)\.(\d+)/.exec(sdk) : null;
  if (m) return { value: `${m[1]}.${m[2]}.${m[3]}`, source: 'global.json' };
  const tf = project ? /<TargetFrameworks?>\s*([^<;]+)/.exec(project.text)?.[1] : undefined;
  const net = tf ? /(?:net|netcoreapp)(\d+\.\d+)/.exec(tf) : null;
  return net ? { value: net[1]!, source: baseName(project!.file) + '.csproj' } : null;
}

export const dotnetProvider: Provider = {
  name: 'dotnet',
  detect: (f) => f.matching(/\.csproj$/i).length > 0 || (f.matching(/\.sln$/i).length > 0 && solutionProjects(f).length > 0),
  plan(f): Detection {
    const main = mainProject(f);
    const d = detection('dotnet', { packageManager: 'nuget', programs: ['dotnet'], port: 8080 });
    const v = version(f, main?.project ?? null);
    if (v) d.version = v;
    if (main && isWeb(main.project)) d.framework = 'aspnet';
    // With one project or solution file in the folder the SDK finds it; otherwise the project is named.
    const single = f.matching(/\.(csproj|sln)$/i).length === 1;
    const target = main && !(single && !main.viaSolution) ? `${main.project.file} ` : '';
    d.install = [single || !main ? 'dotnet restore' : `dotnet restore ${main.project.file}`];
    d.build = [`dotnet publish ${target}--no-restore -c Release -o out`];
    d.outputDirectory = 'out';
    if (main) {
      const assembly = /<AssemblyName>\s*([^<\s]+)\s*<\/AssemblyName>/.exec(main.project.text)?.[1] ?? baseName(main.project.file);
      d.start = `ASPNETCORE_URLS=http://0.0.0.0:\${PORT:-8080} dotnet out/${assembly}.dll`;
    }
    return d;
  },
};
