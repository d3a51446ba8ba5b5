/**
 * The java provider: Maven (`pom.xml`, or pom.atom/.clj/.groovy/.rb/.scala/.yaml/.yml as Railpack
 * accepts) and Gradle (`gradlew`, as Railpack; Berth also takes a build.gradle(.kts) without a
 * wrapper and runs the host's `gradle`).
 *
 * - Gradle (whenever there is a `gradlew`): `./gradlew clean build -x check -x test -Pproduction`.
 * - Maven: `./mvnw` when both mvnw and .mvn/wrapper/maven-wrapper.properties exist, else `mvn`:
 *   `<mvn> -DoutputFile=target/mvn-dependency-list.log -B -DskipTests clean dependency:list install -Pproduction`.
 *   Both are Railpack's build commands. Railpack first runs `chmod +x` on a wrapper that is not
 *   executable; Berth expects the wrapper as committed (git keeps the mode).
 * - start: `java -jar <archive>`, the archive named exactly (java-artifact.ts: no glob, which the
 *   runner refuses); Spring Boot gets `-Dserver.port=${PORT:-8080}` (WildFly Swarm
 *   `-Dswarm.http.port=...`), as Railpack passes `$PORT`. Railpack's `$JAVA_OPTS` is left out: unset,
 *   it would be an empty argument here.
 * - version: Railpack takes the JDK from RAILPACK_JDK_VERSION (default 21, and 8 for Gradle 5 or
 *   older). Berth answers the pin the project carries: `.java-version`, mise.toml / .tool-versions,
 *   pom.xml's `java.version` / `maven.compiler.release|source|target`, Gradle's toolchain
 *   `languageVersion` / `jvmToolchain` / `sourceCompatibility`; a wrapper of Gradle <= 5 pins 8 (Railpack's rule).
 */
import type { Facts } from '../facts.js';
import { detection, type Detection, type Provider } from '../plan.js';
import { gradleArchive, gradleProject, mavenArchive, readPom, usesSpringBootPom } from './java-artifact.js';
import { pinned, type Pin } from './versions.js';

const POMS = ['pom.xml', 'pom.atom', 'pom.clj', 'pom.groovy', 'pom.rb', 'pom.scala', 'pom.yaml', 'pom.yml'];
const GRADLE_FILES = ['build.gradle', 'build.gradle.kts', 'settings.gradle', 'settings.gradle.kts'];

function usesSpringBootGradle(text: string): boolean {
  return ['org.springframework.boot:spring-boot', 'spring-boot-gradle-plugin', 'org.springframework.boot', 'org.grails:grails-'].some((s) => text.includes(s));
}

/** The Gradle major version of the wrapper (`distributionUrl=...gradle-8.5-bin.zip` → 8). */
function wrapperGradleMajor(f: Facts): number | null {
  const m = /distributionUrl\S*?gradle-(\d+)(?:\.\d+)*/.exec(f.read('gradle/wrapper/gradle-wrapper.properties') ?? '');
  return m ? Number(m[1]) : null;
}

const majorOf = (v: string): string => v.replace(/^1\.(?=\d)/, '');

function pomVersion(f: Facts): Pin | null {
  const pom = readPom(f);
  if (!pom) return null;
  for (const key of ['java.version', 'maven.compiler.release', 'maven.compiler.source', 'maven.compiler.target']) {
    const v = pom.properties[key];
    if (v && /^\d/.test(v)) return { value: majorOf(v), source: 'pom.xml' };
  }
  return null;
}

function gradleVersion(text: string): Pin | null {
  const m =
    /JavaLanguageVersion\.of\(\s*['"]?(\d+)/.exec(text) ??
    /jvmToolchain\(\s*(\d+)/.exec(text) ??
    /sourceCompatibility\s*=\s*(?:JavaVersion\.VERSION_)?['"]?(\d+(?:[._]\d+)?)/.exec(text);
  return m ? { value: majorOf(m[1]!.replace('_', '.')), source: 'build.gradle' } : null;
}

export const javaProvider: Provider = {
  name: 'java',
  detect: (f) => POMS.some((p) => f.hasFile(p)) || f.hasFile('gradlew') || GRADLE_FILES.some((g) => f.hasFile(g)),
  plan(f): Detection {
    const gradle = f.hasFile('gradlew') || (!POMS.some((p) => f.hasFile(p)) && GRADLE_FILES.some((g) => f.hasFile(g)));
    const d = detection('java', { packageManager: gradle ? 'gradle' : 'maven', programs: ['java'], port: 8080 });
    let springBoot = false;
    let portFlag = '';
    let archive: string | null = null;
    let version = pinned(f, ['.java-version'], ['java']);

    if (gradle) {
      const wrapper = f.hasFile('gradlew');
      if (!wrapper) d.programs.push('gradle');
      d.build = [`${wrapper ? './gradlew' : 'gradle'} clean build -x check -x test -Pproduction`];
      const project = gradleProject(f);
      springBoot = usesSpringBootGradle(project.text);
      if (springBoot) portFlag = '-Dserver.port=${PORT:-8080} ';
      archive = gradleArchive(f);
      version ??= gradleVersion(project.text);
      const major = wrapperGradleMajor(f);
      if (major !== null && major <= 5) version = { value: '8', source: 'gradle-wrapper.properties' };
    } else {
      const wrapper = f.hasFile('mvnw') && f.read('.mvn/wrapper/maven-wrapper.properties') !== null;
      if (!wrapper) d.programs.push('mvn');
      d.build = [`${wrapper ? './mvnw' : 'mvn'} -DoutputFile=target/mvn-dependency-list.log -B -DskipTests clean dependency:list install -Pproduction`];
      const pom = readPom(f);
      if (pom) {
        const built = mavenArchive(f, pom);
        archive = built?.path ?? null;
        springBoot = usesSpringBootPom(pom) || (!!built && usesSpringBootPom(built.pom));
        if (pom.text.includes('<groupId>org.wildfly.swarm')) portFlag = '-Dswarm.http.port=${PORT:-8080} ';
        else if (springBoot) portFlag = '-Dserver.port=${PORT:-8080} ';
      }
      version ??= pomVersion(f);
    }
    if (springBoot) d.framework = 'spring-boot';
    if (version) d.version = version;
    if (archive) {
      d.start = `java ${portFlag}-jar ${archive}`;
      d.outputDirectory = archive.slice(0, archive.lastIndexOf('/'));
    }
    return d;
  },
};
