import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { JobsError } from '../../model/index.js';
import { quoteIdent } from '../sql/sql-identifiers.js';

/**
 * One version of the schema: `NNNN-name.sql` beside this file, and its
 * `NNNN-name.down.sql`. A released file never changes (its checksum is
 * recorded in every database it migrated, and a unit test pins it); a
 * changed table ships as the next version. `:SCHEMA` stands for the quoted
 * schema name. Files hold schema only (tables, columns, indexes,
 * constraints); the database routines are code (lib/storage/routines),
 * except the functions version 1 shipped as released.
 *
 * The versions after the last released one may still change before the
 * next release: they are written to run again over a schema that has them
 * (IF NOT EXISTS, a changed constraint dropped before it is added), and a
 * schema that recorded other texts of them is refused at start, with
 * `migrate --reset-unreleased` as the fix.
 *
 * A file whose first line is `-- breaking: <why>` is a version an older
 * build cannot run beside: a build that does not know it refuses to start
 * on a schema that has it, and the migrator defers it while a worker of an
 * older build is alive.
 */
export interface SchemaMigration {
  version: number;
  name: string;
  /** The file's text, placeholder included: what is checksummed. */
  up: string;
  down: string;
  /** First 16 hex digits of the SHA-1 of `up`, as recorded in schema_version. */
  checksum: string;
  /** Why an older build cannot run beside this version, or null when it can. */
  breaking: string | null;
}

/**
 * The latest version a release shipped (0.1.0: versions 1 to 3). Raised at
 * each release that adds versions, with their checksums pinned in
 * test/unit/migrations.spec.ts.
 */
export const LAST_RELEASED_VERSION = 3;

const FILE = /^(\d{4})-([a-z0-9-]+)\.sql$/;
const BREAKING = /^-- breaking: (.+)$/;
/** A down file's line that stands for one function of a released file, copied from it at load. */
const RESTORE = /^-- restore: (\d{4}-[a-z0-9-]+\.sql) (\w+)$/gm;
const DIRECTORY = new URL('./', import.meta.url);

let loaded: readonly SchemaMigration[] | null = null;

/** Every version, in order; read once from the files shipped beside this module. */
export function schemaMigrations(): readonly SchemaMigration[] {
  return (loaded ??= readMigrations());
}

/** The latest version this build knows: what its workers register with. */
export function latestSchemaVersion(): number {
  return Math.max(...schemaMigrations().map((m) => m.version));
}

/** A migration's SQL for one schema. */
export function migrationSql(text: string, schema: string): string {
  return text.replaceAll(':SCHEMA', quoteIdent(schema));
}

function readMigrations(): SchemaMigration[] {
  const read = (file: string) => readFileSync(new URL(file, DIRECTORY), 'utf8').replace(/\r\n/g, '\n');
  const files = readdirSync(DIRECTORY)
    .filter((f) => FILE.test(f))
    .sort();
  return files.map((file, index) => {
    const [, number, name] = FILE.exec(file)!;
    const version = Number(number);
    // A gap or a duplicate would make "the versions it lacks" ambiguous between builds.
    if (version !== index + 1) {
      throw new JobsError(
        `nestjs-durable-jobs: migration ${file} is out of sequence (expected version ${index + 1}). ` +
          `Potential fix: number the files of lib/storage/migrations 0001, 0002, ... without gaps or duplicates.`,
      );
    }
    const up = read(file);
    return {
      version,
      name: name!,
      up,
      down: restoreReleased(read(file.replace(/\.sql$/, '.down.sql')), read),
      checksum: createHash('sha1').update(up).digest('hex').slice(0, 16),
      breaking: BREAKING.exec(up.split('\n', 1)[0]!)?.[1] ?? null,
    };
  });
}

/**
 * A down file that brings back functions a later version dropped names each
 * by its released file and name (`-- restore: 0001-initial.sql settle_jobs`):
 * its text is taken from that frozen file, so the released body is never
 * copied into another migration.
 */
function restoreReleased(down: string, read: (file: string) => string): string {
  return down.replace(RESTORE, (_line, file: string, fn: string) => {
    const text = read(file);
    const start = text.indexOf(`CREATE OR REPLACE FUNCTION :SCHEMA.${fn}(`);
    const end = text.indexOf('$fn$;', start);
    if (start < 0 || end < 0) {
      throw new JobsError(
        `nestjs-durable-jobs: a down migration restores function ${fn} from ${file}, which does not define it. ` +
          `Potential fix: name the released file that creates ${fn} in its "-- restore:" line.`,
      );
    }
    return text.slice(start, end + '$fn$;'.length);
  });
}
