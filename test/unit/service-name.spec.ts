import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobsError } from '../../lib/model/index.js';
import { FALLBACK_SERVICE, resolveServiceName, resolveUnhandledJobsOptions } from '../../lib/discovery/service-name.js';

const dirs: string[] = [];
function appDir(packageJson?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'service-name-'));
  dirs.push(dir);
  if (packageJson !== undefined) writeFileSync(join(dir, 'package.json'), packageJson);
  return dir;
}
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe('the service an app is', () => {
  it('is the service option when given, whatever package.json says', () => {
    expect(resolveServiceName('billing', appDir('{"name":"api"}'))).toBe('billing');
  });

  it('defaults to the name in the package.json of the working directory, scoped names included', () => {
    expect(resolveServiceName(undefined, appDir('{"name":"@acme/mailer"}'))).toBe('@acme/mailer');
  });

  it(`falls back to '${FALLBACK_SERVICE}' without a package.json, without a name in it, or when it is not JSON`, () => {
    expect(resolveServiceName(undefined, appDir())).toBe(FALLBACK_SERVICE);
    expect(resolveServiceName(undefined, appDir('{"private":true}'))).toBe(FALLBACK_SERVICE);
    expect(resolveServiceName(undefined, appDir('{ not json'))).toBe(FALLBACK_SERVICE);
  });

  it('refuses a service that is not a usable name, naming the option and the fix', () => {
    for (const bad of ['', '   ', 42, null, 'x'.repeat(201), 'a\u0000b']) {
      const call = () => resolveServiceName(bad, appDir('{"name":"api"}'));
      expect(call).toThrow(JobsError);
      expect(call).toThrow(/JobsModule: "service".*Potential fix/);
    }
  });
});

describe('what becomes of jobs no running app handles', () => {
  it('lets them wait unless failAfter is set', () => {
    expect(resolveUnhandledJobsOptions(undefined)).toEqual({ failAfter: null });
    expect(resolveUnhandledJobsOptions({})).toEqual({ failAfter: null });
    expect(resolveUnhandledJobsOptions({ failAfter: 3_600_000 })).toEqual({ failAfter: 3_600_000 });
  });

  it('refuses a failAfter that is not a whole number of milliseconds of at least a second', () => {
    for (const failAfter of [0, 999, 1.5, '1h', -1]) {
      const call = () => resolveUnhandledJobsOptions({ failAfter: failAfter as number });
      expect(call).toThrow(JobsError);
      expect(call).toThrow(/failAfter/);
    }
    expect(() => resolveUnhandledJobsOptions(5 as never)).toThrow(/"unhandledJobs" must be an object/);
  });
});
