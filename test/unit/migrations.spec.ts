import { schemaMigrations } from '../../lib/storage/migrations/migration-files.js';
import { TOPIC_PREFIXES } from '../../lib/storage/notifications/notification-topics.js';

describe('schema migrations', () => {
  it('released versions never change: each file still has the checksum databases recorded', () => {
    // A version adds its line below when it is released; an edit to a released file fails this test.
    const now = Object.fromEntries(
      schemaMigrations()
        .filter((m) => m.version in RELEASED)
        .map((m) => [m.version, m.checksum]),
    );
    expect(now).toEqual(RELEASED);
  });

  it('are numbered without gaps and each has its down file', () => {
    const all = schemaMigrations();
    expect(all.map((m) => m.version)).toEqual(all.map((_, i) => i + 1));
    for (const m of all) {
      expect(m.up).toContain(':SCHEMA.');
      expect(m.down.trim()).not.toBe('');
    }
  });

  it('the frozen SQL wakes queues with the notification topic the listener decodes', () => {
    const wakes = schemaMigrations()
      .flatMap((m) => [...m.up.matchAll(/pg_notify\(\w+, '([a-z]:)'/g)])
      .map((match) => match[1]);
    expect(wakes.length).toBeGreaterThan(0);
    for (const prefix of wakes) expect(Object.values(TOPIC_PREFIXES)).toContain(prefix);
    expect(wakes).toContain(TOPIC_PREFIXES.queue);
  });
});

/** Checksums of the files as released; see the first test. */
const RELEASED: Record<number, string> = {
  1: '08c35005c1996488',
  2: '2ea86fb2c508fb4c',
  3: '9909e0e967bd5e76',
  4: 'e03e17a376200d00',
  5: '90a48b045e5ad8ca',
  6: '87686b6a553a14c3',
  7: '32dfcc49ccb46a72',
  8: 'bd1e3f0a3cc9e7f8',
};
