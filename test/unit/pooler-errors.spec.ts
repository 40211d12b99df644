import { JobsDatabaseError, JobsError } from '../../lib/model/index.js';
import { poolerRefusal } from '../../lib/storage/sql/pooler-errors.js';

describe("a pooler's refusals", () => {
  it('a named prepared statement missing on the server session becomes a JobsError naming pooler: transaction', () => {
    const driver = Object.assign(new Error('prepared statement "durable_jobs_claim_0123456789ab" does not exist'), {
      code: '26000',
    });
    const refusal = poolerRefusal(driver);
    expect(refusal).toBeInstanceOf(JobsError);
    expect(refusal!.message).toMatch(/transaction pooler.*Potential fix: JobsModule.forRoot\(\{ pooler: 'transaction'/);
    expect((refusal as { cause?: unknown }).cause).toBe(driver);
  });

  it('so does one prepared already by another client of the same server session', () => {
    const driver = Object.assign(new Error('prepared statement "durable_jobs_claim_0123" already exists'), {
      code: '42P05',
    });
    expect(poolerRefusal(driver)).toBeInstanceOf(JobsError);
  });

  it('leaves every other error alone', () => {
    expect(poolerRefusal(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBeNull();
    expect(poolerRefusal(Object.assign(new Error('cursor "x" does not exist'), { code: '34000' }))).toBeNull();
    expect(poolerRefusal(undefined)).toBeNull();
  });

  it('a startup parameter a pooler refuses gets the fix for the pooler, not "check PostgreSQL is reachable"', () => {
    const error = new JobsDatabaseError(
      'JobsModule: connecting to PostgreSQL',
      new Error('unsupported startup parameter: options'),
    );
    expect(error.message).toMatch(/refused a startup parameter.*ignore_startup_parameters/);
    expect(error.message).not.toMatch(/reachable/);
  });
});
