import { readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JobsError } from '../../model/index.js';

/** One file the page loads: its bytes and the Content-Type it is served with. */
interface PageAsset {
  body: Buffer;
  type: string;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

// Beside this folder in lib/ and in dist/lib alike: the build copies the folder as it is.
const ASSETS = new URL('../assets/', import.meta.url);

let loaded: ReadonlyMap<string, PageAsset> | undefined;

/**
 * The page's script modules and stylesheet, by file name, read once: the
 * routes serve these and nothing else, so no request names a path on disk.
 */
export function pageAssets(): ReadonlyMap<string, PageAsset> {
  if (loaded) return loaded;
  const dir = fileURLToPath(ASSETS);
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => TYPES[extname(name)] !== undefined);
  } catch (error) {
    throw new JobsError(
      `JobsDashboardModule: the page's files are not in ${dir} (${(error as Error).message}). ` +
        'Potential fix: build with `npm run build`, which copies lib/dashboard/assets next to the compiled dashboard.',
    );
  }
  loaded = new Map(
    names.sort().map((name) => [name, { body: readFileSync(new URL(name, ASSETS)), type: TYPES[extname(name)]! }]),
  );
  return loaded;
}
