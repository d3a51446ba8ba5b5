/**
 * Where a Java build leaves its runnable archive, read from the build files, so the start command
 * names it exactly. Railpack starts `java -jar target/*jar` (Maven) or the first non-plain jar of
 * `*\/build/libs` (Gradle) through a shell glob; Berth runs commands without a shell, so the
 * archive's name is computed here instead:
 *
 * - Maven: `target/<finalName>.<packaging>`, `finalName` defaulting to `<artifactId>-<version>`
 *   (the project's own coordinates; the version may come from `<parent>`; `${property}` values
 *   resolve from `<properties>`). A multi-module build runs the module that has the Spring Boot
 *   plugin (else the first module): `<module>/target/...`.
 * - Gradle: `build/libs/<archiveBaseName>-<version>.jar`, the base name being `rootProject.name`
 *   from settings.gradle(.kts) (else the folder's name), the version the build file's `version`;
 *   `archiveFileName` wins. With no root build file, the first included project builds it.
 */
import path from 'node:path';
import type { Facts } from '../facts.js';

function stripComments(xml: string): string {
  return xml.replace(/<!--[\s\S]*?-->/g, '');
}

/** The XML without the given elements (and what they hold). */
function without(xml: string, tags: string[]): string {
  let out = xml;
  for (const t of tags) out = out.replace(new RegExp(`<${t}(?:\\s[^>]*)?>[\\s\\S]*?</${t}>`, 'g'), '');
  return out;
}

function tag(xml: string, name: string): string | null {
  const m = new RegExp(`<${name}>\\s*([^<]*?)\\s*</${name}>`).exec(xml);
  return m ? m[1]! : null;
}

function block(xml: string, name: string): string {
  const m = new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`).exec(xml);
  return m ? m[1]! : '';
}

export interface Pom {
  artifactId: string | null;
  version: string | null;
  packaging: string;
  finalName: string | null;
  properties: Record<string, string>;
  modules: string[];
  text: string;
}

export function readPom(f: Facts, file = 'pom.xml'): Pom | null {
  const raw = f.read(file);
  if (raw === null) return null;
  const xml = stripComments(raw);
  const project = block(xml, 'project') || xml;
  const parent = block(project, 'parent');
  const props: Record<string, string> = {};
  for (const m of block(project, 'properties').matchAll(/<([\w.-]+)>\s*([^<]*?)\s*<\/\1>/g)) props[m[1]!] = m[2]!;
  const build = without(block(project, 'build'), ['plugins', 'pluginManagement', 'resources', 'testResources', 'extensions']);
  const own = without(project, ['parent', 'dependencies', 'dependencyManagement', 'build', 'profiles', 'modules', 'reporting', 'properties', 'repositories', 'pluginRepositories', 'distributionManagement', 'developers', 'contributors', 'licenses', 'scm', 'organization', 'issueManagement', 'ciManagement', 'mailingLists']);
  const modules = [...block(project, 'modules').matchAll(/<module>\s*([^<]+?)\s*<\/module>/g)].map((m) => m[1]!);
  return {
    artifactId: tag(own, 'artifactId'),
    version: tag(own, 'version') ?? tag(parent, 'version'),
    packaging: tag(own, 'packaging') ?? 'jar',
    finalName: tag(build, 'finalName'),
    properties: props,
    modules,
    text: xml,
  };
}

/** Resolves `${name}` from the pom's properties and coordinates; null when something stays unresolved. */
function resolve(value: string, pom: Pom): string | null {
  const known: Record<string, string> = { ...pom.properties };
  if (pom.version) known['project.version'] = known['pom.version'] = pom.version;
  if (pom.artifactId) known['project.artifactId'] = known['pom.artifactId'] = pom.artifactId;
  let out = value;
  for (let i = 0; i < 5 && out.includes('${'); i++) out = out.replace(/\$\{([\w.-]+)\}/g, (all, name: string) => known[name] ?? all);
  return out.includes('${') || !out ? null : out;
}

export function usesSpringBootPom(pom: Pom): boolean {
  return pom.text.includes('<groupId>org.springframework.boot') && pom.text.includes('<artifactId>spring-boot');
}

/** The archive a Maven build produces (`target/demo-0.0.1-SNAPSHOT.jar`), or null when its name cannot be known. */
export function mavenArchive(f: Facts, pom: Pom): { path: string; pom: Pom } | null {
  let dir = '';
  let target = pom;
  if (pom.modules.length) {
    const mods = pom.modules.filter((m) => /^[\w.-]+(?:\/[\w.-]+)*\/?$/.test(m) && !m.split('/').includes('..')).map((m) => ({ m, pom: readPom(f, `${m}/pom.xml`) })).filter((x): x is { m: string; pom: Pom } => !!x.pom);
    const pick = mods.find((x) => x.pom.text.includes('spring-boot-maven-plugin')) ?? mods[0];
    if (!pick) return null;
    dir = `${pick.m.replace(/\/+$/, '')}/`;
    target = { ...pick.pom, properties: { ...pom.properties, ...pick.pom.properties } };
  }
  const ext = target.packaging === 'war' ? 'war' : 'jar';
  const base = target.finalName ?? (target.artifactId && target.version ? `${target.artifactId}-${target.version}` : null);
  const name = base ? resolve(base, target) : null;
  return name ? { path: `${dir}target/${name}.${ext}`, pom: target } : null;
}

function gradleBuildFile(f: Facts, dir: string): string | null {
  for (const name of ['build.gradle', 'build.gradle.kts']) {
    const text = f.read(dir ? `${dir}/${name}` : name);
    if (text !== null) return text;
  }
  return null;
}

export function gradleSettings(f: Facts): string {
  return f.read('settings.gradle') ?? f.read('settings.gradle.kts') ?? '';
}

/** The build file of the project the Gradle build runs (the root's, else the first included project's). */
export function gradleProject(f: Facts): { dir: string; text: string } {
  const root = gradleBuildFile(f, '');
  if (root !== null) return { dir: '', text: root };
  const include = /^\s*include\s*\(?\s*['"]:?([\w.-]+)['"]/m.exec(gradleSettings(f));
  const dir = include?.[1] ?? '';
  return { dir, text: (dir && gradleBuildFile(f, dir)) || '' };
}

/** The jar a Gradle build produces (`build/libs/api-0.0.1-SNAPSHOT.jar`). */
export function gradleArchive(f: Facts): string {
  const { dir, text } = gradleProject(f);
  const libs = `${dir ? `${dir}/` : ''}build/libs`;
  const fileName = /archiveFileName(?:\.set\(|\s*=)\s*['"]([^'"$]+)['"]/.exec(text);
  if (fileName) return `${libs}/${fileName[1]}`;
  const rootName = /rootProject\.name\s*=\s*['"]([^'"]+)['"]/.exec(gradleSettings(f))?.[1];
  const baseName = /archiveBaseName(?:\.set\(|\s*=)\s*['"]([^'"$]+)['"]/.exec(text)?.[1] ?? (dir || rootName || path.basename(path.join(f.root, f.rel)));
  const version = /^\s*version\s*=\s*['"]([^'"$]+)['"]/m.exec(text)?.[1];
  return `${libs}/${baseName}${version && version !== 'unspecified' ? `-${version}` : ''}.jar`;
}
