import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { detectFolder } from '../../../src/modules/detect/detect.js';
import { Facts } from '../../../src/modules/detect/facts.js';
import { scanProject } from '../../../src/modules/detect/scan.js';
import { parseCommand } from '../../../src/runtime/command.js';
import { casesOf, expectPlan, FIXTURES, tempApp as app } from './support.js';

const SPRING_POM = (body: string) => `<project>
  <modelVersion>4.0.0</modelVersion>
  ${body}
</project>`;

describe('java provider', () => {
  const cases = casesOf('java');
  it('has its three corpus cases', () => assert.equal(cases.length, 3, cases.join(', ')));
  for (const name of cases) it(`plans ${name} as Railpack does (the archive named, no glob)`, () => expectPlan(name));

  it('plans commands the runner accepts (no shell operators, no globs)', () => {
    for (const name of cases) {
      const { plan } = scanProject(path.join(FIXTURES, name));
      for (const cmd of [...plan.install, ...plan.build, ...(plan.start ? [plan.start] : [])]) assert.doesNotThrow(() => parseCommand(cmd), `${name}: ${cmd}`);
    }
  });

  it('needs mvn or gradle on the host only without a wrapper', () => {
    const programs = (files: Record<string, string>) => detectFolder(new Facts(app(files), '', null)).programs;
    assert.deepEqual(programs({ 'pom.xml': SPRING_POM('<artifactId>a</artifactId><version>1</version>') }), ['java', 'mvn']);
    assert.deepEqual(programs({ 'pom.xml': SPRING_POM('<artifactId>a</artifactId><version>1</version>'), mvnw: '#!/bin/sh\n' }), ['java', 'mvn'], 'mvnw without .mvn/wrapper is not used');
    assert.deepEqual(programs({ 'build.gradle': "plugins { id 'java' }\n" }), ['java', 'gradle']);
    assert.deepEqual(programs({ 'build.gradle': "plugins { id 'java' }\n", gradlew: '#!/bin/sh\n' }), ['java']);
  });

  it('builds with the host gradle when there is no wrapper, naming the jar from settings.gradle.kts and the Kotlin build file', () => {
    const got = scanProject(app({
      'settings.gradle.kts': 'rootProject.name = "svc"\n',
      'build.gradle.kts': 'plugins {\n  id("org.springframework.boot") version "3.3.0"\n}\nversion = "1.2.0"\nkotlin { jvmToolchain(17) }\n',
    }));
    assert.equal(got.plan.build[0], 'gradle clean build -x check -x test -Pproduction');
    assert.equal(got.plan.start, 'java -Dserver.port=${PORT:-8080} -jar build/libs/svc-1.2.0.jar');
    assert.equal(got.plan.version, '17');
    assert.equal(got.framework, 'spring-boot');
  });

  it('runs the included project of a Gradle build without a root build file (gradle init layout)', () => {
    const got = scanProject(app({ 'settings.gradle': "rootProject.name = 'tool'\ninclude('app')\n", gradlew: '#!/bin/sh\n', 'app/build.gradle': "plugins { id 'application' }\n" }));
    assert.equal(got.plan.start, 'java -jar app/build/libs/app.jar');
  });

  it('pins JDK 8 for a Gradle 5 wrapper, as Railpack does', () => {
    const got = scanProject(app({ gradlew: '#!/bin/sh\n', 'build.gradle': 'sourceCompatibility = 11\n', 'gradle/wrapper/gradle-wrapper.properties': 'distributionUrl=https\\://services.gradle.org/distributions/gradle-5.6.4-all.zip\n' }));
    assert.equal(got.plan.version, '8');
  });

  it('runs the Spring Boot module of a multi-module Maven build, its version inherited from the parent', () => {
    const got = scanProject(app({
      'pom.xml': SPRING_POM('<groupId>x</groupId><artifactId>root</artifactId><version>2.0.0</version><packaging>pom</packaging><modules><module>core</module><module>web</module></modules>'),
      'core/pom.xml': SPRING_POM('<parent><artifactId>root</artifactId><version>2.0.0</version></parent><artifactId>core</artifactId>'),
      'web/pom.xml': SPRING_POM('<parent><groupId>x</groupId><artifactId>root</artifactId><version>2.0.0</version></parent><artifactId>web</artifactId><dependencies><dependency><groupId>org.springframework.boot</groupId><artifactId>spring-boot-starter-web</artifactId></dependency></dependencies><build><plugins><plugin><artifactId>spring-boot-maven-plugin</artifactId></plugin></plugins></build>'),
    }));
    assert.equal(got.plan.start, 'java -Dserver.port=${PORT:-8080} -jar web/target/web-2.0.0.jar');
    assert.equal(got.framework, 'spring-boot');
  });

  it('resolves ${revision}-style versions from properties, names a war, and gives no start when the name cannot be known', () => {
    const war = scanProject(app({ 'pom.xml': SPRING_POM('<artifactId>shop</artifactId><version>${revision}</version><packaging>war</packaging><properties><revision>3.1</revision></properties>') }));
    assert.equal(war.plan.start, 'java -jar target/shop-3.1.war');
    const unknown = scanProject(app({ 'pom.xml': SPRING_POM('<artifactId>shop</artifactId><version>${revision}</version>') }));
    assert.equal(unknown.runtime, 'java');
    assert.equal(unknown.plan.start, undefined);
  });

  it('passes the WildFly Swarm port flag', () => {
    const got = scanProject(app({ 'pom.xml': SPRING_POM('<artifactId>svc</artifactId><version>1</version><dependencies><dependency><groupId>org.wildfly.swarm</groupId><artifactId>jaxrs</artifactId></dependency></dependencies>') }));
    assert.equal(got.plan.start, 'java -Dswarm.http.port=${PORT:-8080} -jar target/svc-1.jar');
  });

  it('ignores module paths that leave the folder', () => {
    const got = scanProject(app({ 'pom.xml': SPRING_POM('<artifactId>r</artifactId><version>1</version><modules><module>../other</module></modules>') }));
    assert.equal(got.plan.start, undefined);
  });
});
