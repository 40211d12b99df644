import { JobsError } from '../../lib/model/index.js';
import { checkDatabaseChoice } from '../../lib/storage/connection/database-choice.js';

const none = { connection: false, dataSource: false, embedded: false };

describe('which database the module uses', () => {
  it('refuses a connection key that is present but undefined (an unset DATABASE_URL), naming the fix', () => {
    const call = () => checkDatabaseChoice({ connection: undefined, given: { ...none, connection: true } }, {});
    expect(call).toThrow(JobsError);
    expect(call).toThrow(/"connection" is undefined.*process\.env\.DATABASE_URL.*Potential fix: set the variable/);
  });

  it('refuses a dataSource key that is present but undefined', () => {
    expect(() => checkDatabaseChoice({ dataSource: undefined, given: { ...none, dataSource: true } }, {})).toThrow(
      /"dataSource" is undefined/,
    );
  });

  it('starts the embedded server only when no key is given, or embedded is', () => {
    expect(() => checkDatabaseChoice({ given: none }, {})).not.toThrow();
    expect(() => checkDatabaseChoice({ embedded: {}, given: { ...none, embedded: true } }, {})).not.toThrow();
  });

  it('never under NODE_ENV=production', () => {
    expect(() => checkDatabaseChoice({ given: none }, { NODE_ENV: 'production' })).toThrow(
      /NODE_ENV is "production".*Potential fix: connection: process\.env\.DATABASE_URL/,
    );
    expect(() =>
      checkDatabaseChoice(
        { connection: 'postgres://x', given: { ...none, connection: true } },
        { NODE_ENV: 'production' },
      ),
    ).not.toThrow();
  });

  it('refuses embedded beside a real database', () => {
    expect(() =>
      checkDatabaseChoice({
        connection: 'postgres://x',
        embedded: {},
        given: { ...none, connection: true, embedded: true },
      }),
    ).toThrow(/"embedded" is given beside "connection"/);
  });
});
