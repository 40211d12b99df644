import { readFileSync } from 'node:fs';
import { LAST_RELEASED_VERSION, schemaMigrations } from '../../lib/storage/migrations/migration-files.js';
import { TOPIC_PREFIXES } from '../../lib/storage/sql/notification-topics.js';

const unreleased = () => schemaMigrations().filter((m) => m.version > LAST_RELEASED_VERSION);

describe('schema migrations', () => {
  it('released versions never change: each file still has the checksum databases recorded', () => {
    // A release adds its versions' lines below and raises LAST_RELEASED_VERSION; an edit to a released file fails this test.
    const now = Object.fromEntries(
      schemaMigrations()
        .filter((m) => m.version <= LAST_RELEASED_VERSION)
        .map((m) => [m.version, m.checksum]),
    );
    expect(now).toEqual(RELEASED);
    expect(Object.keys(RELEASED).map(Number)).toEqual(Array.from({ length: LAST_RELEASED_VERSION }, (_, i) => i + 1));
  });

  it('are numbered without gaps and each has its down file', () => {
    const all = schemaMigrations();
    expect(all.map((m) => m.version)).toEqual(all.map((_, i) => i + 1));
    expect(unreleased().length).toBeGreaterThan(0);
    for (const m of all) {
      expect(m.up).toContain(':SCHEMA.');
      expect(m.down.trim()).not.toBe('');
    }
  });

  it('after the released versions, files hold schema only: no function, procedure or DO block (routines are code)', () => {
    const code = /CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)|\bDO\s+(LANGUAGE\s+\w+\s+)?\$|\$fn\$/i;
    for (const m of unreleased()) {
      expect(m.up).not.toMatch(code);
      expect(fileText(m.version, m.name, '.down.sql')).not.toMatch(code);
    }
  });

  it('unreleased files run again over a schema that has them: every create, add and drop is conditional', () => {
    for (const { version, up } of unreleased()) {
      const sql = up.replace(/--.*$/gm, '');
      const unconditional = [
        ...sql.matchAll(/CREATE\s+(UNIQUE\s+)?INDEX\s+(?!IF NOT EXISTS)\S+/gi),
        ...sql.matchAll(/CREATE\s+TABLE\s+(?!IF NOT EXISTS)\S+/gi),
        ...sql.matchAll(/ADD\s+COLUMN\s+(?!IF NOT EXISTS)\S+/gi),
        ...sql.matchAll(/DROP\s+(TABLE|INDEX|COLUMN|CONSTRAINT|FUNCTION)\s+(?!IF EXISTS)\S+/gi),
      ].map((match) => match[0]);
      expect({ version, unconditional }).toEqual({ version, unconditional: [] });
      // A constraint is added again only after the same name was dropped, if it was there.
      for (const added of sql.matchAll(/ADD\s+CONSTRAINT\s+(\w+)/gi)) {
        expect(sql.slice(0, added.index)).toMatch(
          new RegExp(`DROP\\s+CONSTRAINT\\s+IF\\s+EXISTS\\s+${added[1]}\\b`, 'i'),
        );
      }
    }
  });

  it('a first line "-- breaking: <why>" marks a version breaking; the others are not', () => {
    const breaking = Object.fromEntries(
      schemaMigrations()
        .filter((m) => m.breaking !== null)
        .map((m) => [m.version, m.breaking]),
    );
    expect(breaking).toEqual({ 5: expect.stringMatching(/^drops settle_jobs, release_children and reopen_job/) });
  });

  it('a down file that brings released functions back takes each from its frozen file', () => {
    const [v1, v5] = [1, 5].map((v) => schemaMigrations()[v - 1]!);
    for (const fn of ['release_children', 'settle_jobs', 'reopen_job']) {
      expect(v5.down).toContain(released(v1.up, fn));
    }
    expect(v5.down).not.toContain('-- restore:');
    expect(fileText(v5.version, v5.name, '.down.sql')).toContain('-- restore: 0001-initial.sql settle_jobs');
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

/**
 * The checksums of the released files (versions 1 to LAST_RELEASED_VERSION), as a database migrated
 * from them records them; see the first test. Release 0.1.0 itself recorded others for versions 1-3,
 * of the same SQL built as statements in code, which the migrator accepts as well.
 */
const RELEASED: Record<number, string> = {
  1: '08c35005c1996488',
  2: '2ea86fb2c508fb4c',
  3: '9909e0e967bd5e76',
};
