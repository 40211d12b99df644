import { SessionSettings, sessionSettingsFor } from '../../lib/storage/sql/session-settings.js';

const settings = [
  ['statement_timeout', '30000'],
  ['enable_seqscan', 'off'],
] as const;

describe('session settings', () => {
  it('are set once per session on a direct connection or a session pooler, with named statements', () => {
    const direct = new SessionSettings(settings, false);
    expect(direct.onConnect).toBe('SET statement_timeout = 30000; SET enable_seqscan = off');
    expect(direct.begin).toBe('BEGIN');
    expect(direct.locals).toBeNull();
    expect(direct.wrapsStatements).toBe(false);
    expect(direct.namedStatements).toBe(true);
    expect(typeof direct.poolHook().onConnect).toBe('function');
  });

  it('open each transaction behind a transaction pooler, and statements go unnamed', () => {
    const pooled = new SessionSettings(settings, true);
    expect(pooled.onConnect).toBeNull();
    expect(pooled.poolHook()).toEqual({});
    expect(pooled.begin).toBe('BEGIN; SET LOCAL statement_timeout = 30000; SET LOCAL enable_seqscan = off');
    expect(pooled.wrapsStatements).toBe(true);
    expect(pooled.namedStatements).toBe(false);
  });

  it('with nothing to set, neither wrap statements nor hook the pool', () => {
    const none = sessionSettingsFor('transaction');
    expect(none.wrapsStatements).toBe(false);
    expect(none.namedStatements).toBe(false);
    expect(none.begin).toBe('BEGIN');
    expect(sessionSettingsFor(null).poolHook()).toEqual({});
    expect(none.with([['synchronous_commit', 'off']]).locals).toBe('SET LOCAL synchronous_commit = off');
  });
});
