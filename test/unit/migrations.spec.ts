import { readFileSync } from 'node:fs';
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

  it('from version 10 on, files hold schema only: no function, procedure or DO block (routines are code)', () => {
    const code = /CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)|\bDO\s+(LANGUAGE\s+\w+\s+)?\$|\$fn\$/i;
    const later = schemaMigrations().filter((m) => m.version >= 10);
    expect(later.length).toBeGreaterThan(0);
    for (const m of later) {
      expect(m.up).not.toMatch(code);
      expect(fileText(m.version, m.name, '.down.sql')).not.toMatch(code);
    }
  });

  it('a first line "-- breaking: <why>" marks a version breaking; the others are not', () => {
    const breaking = Object.fromEntries(
      schemaMigrations()
        .filter((m) => m.breaking !== null)
        .map((m) => [m.version, m.breaking]),
    );
    expect(breaking).toEqual({ 11: expect.stringMatching(/^drops claim_controlled, settle_jobs/) });
  });

  it('the down of version 11 brings back the released functions, taken from their frozen files', () => {
    const [v1, v8, v11] = [1, 8, 11].map((v) => schemaMigrations()[v - 1]!);
    for (const fn of ['release_children', 'settle_jobs', 'reopen_job']) {
      expect(v11.down).toContain(released(v1.up, fn));
    }
    expect(v11.down).toContain(released(v8.up, 'claim_controlled'));
    expect(v11.down).not.toContain('-- restore:');
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

/** A migration file's text as shipped. */
function fileText(version: number, name: string, suffix: string): string {
  const file = `${String(version).padStart(4, '0')}-${name}${suffix}`;
  return readFileSync(new URL(`../../lib/storage/migrations/${file}`, import.meta.url), 'utf8');
}

/** One function's CREATE statement in a released file. */
function released(text: string, fn: string): string {
  const start = text.indexOf(`CREATE OR REPLACE FUNCTION :SCHEMA.${fn}(`);
  expect(start).toBeGreaterThanOrEqual(0);
  return text.slice(start, text.indexOf('$fn$;', start) + 5);
}

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
