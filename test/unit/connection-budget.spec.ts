import { connectionBudget } from '../../lib/storage/sql/connection-budget.js';
import { JobsError } from '../../lib/model/index.js';

const owned = { maxConnections: undefined, owned: true, worker: true, listening: true };

describe('the connection budget', () => {
  it('keeps an instance that owns its connection at 10 by default, one of them kept for renewals', () => {
    const b = connectionBudget(owned);
    expect(b).toEqual({ max: 10, app: 4, worker: 4, renewals: 1, listener: 1 });
    expect(b.app + b.worker + b.renewals + b.listener).toBe(b.max);
  });

  it('shares a larger budget out and never exceeds it', () => {
    for (const max of [5, 6, 9, 12, 20, 40, 100]) {
      const b = connectionBudget({ ...owned, maxConnections: max });
      expect(b.app + b.worker + b.renewals + b.listener).toBe(max);
      expect(b.worker).toBeGreaterThanOrEqual(2);
      expect(b.worker).toBeLessThanOrEqual(8);
      expect(b.app).toBeGreaterThanOrEqual(1);
    }
  });

  it('counts no LISTEN connection behind a transaction pooler without directConnection', () => {
    expect(connectionBudget({ ...owned, listening: false })).toEqual({
      max: 10,
      app: 5,
      worker: 4,
      renewals: 1,
      listener: 0,
    });
  });

  it("bounds the library's own connections beside an app's DataSource (6 by default)", () => {
    expect(connectionBudget({ ...owned, owned: false })).toEqual({
      max: 6,
      app: 0,
      worker: 4,
      renewals: 1,
      listener: 1,
    });
    expect(connectionBudget({ ...owned, owned: false, maxConnections: 4 }).worker).toBe(2);
  });

  it("gives the app's own poolSize to the module's pool and the rest to the worker", () => {
    expect(connectionBudget({ ...owned, appPoolSize: 3 })).toEqual({
      max: 10,
      app: 3,
      worker: 5,
      renewals: 1,
      listener: 1,
    });
  });

  it('an instance without a worker keeps no renewal or worker connections', () => {
    expect(connectionBudget({ ...owned, worker: false, maxConnections: 3 })).toEqual({
      max: 3,
      app: 2,
      worker: 0,
      renewals: 0,
      listener: 1,
    });
  });

  it('refuses a budget below what each use needs, naming the setting and the least that works', () => {
    expect(() => connectionBudget({ ...owned, maxConnections: 4 })).toThrow(JobsError);
    expect(() => connectionBudget({ ...owned, maxConnections: 4 })).toThrow(
      /"maxConnections" is 4, but this instance needs at least 5: 1 for the LISTEN connection, 1 kept for lease renewals, 2 for the worker's claims.*Potential fix: maxConnections: 5 or more/,
    );
    expect(() => connectionBudget({ ...owned, appPoolSize: 9 })).not.toThrow();
    expect(() => connectionBudget({ ...owned, appPoolSize: 9, maxConnections: 10 })).toThrow(
      /needs at least 13.*or a smaller connection.poolSize/,
    );
    expect(() => connectionBudget({ ...owned, maxConnections: 2.5 })).toThrow(/maxConnections/);
    expect(() => connectionBudget({ ...owned, maxConnections: '10' })).toThrow(/maxConnections/);
  });
});
