/**
 * The package as a user gets it: `npm pack` from a copy of the working tree
 * with no dist/ (as a fresh clone has), the tarball installed into a new
 * `"type": "module"` project, then imported, run and compiled against there.
 * The project first gets the required peers only, then the optional ones.
 *
 * Offline-friendly: the tarball's own dependencies (pg, cron) come from npm's
 * cache when it has them (`--prefer-offline`), and the peers are symlinks to
 * this repository's node_modules, so nothing big is downloaded.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { databaseUrl, dropSchemas, uniqueSchema } from '../support/database.js';
import { npm, packWorkingTree, repo, run, succeeded, type Packed, type Run } from './packing.js';
import { SNIPPET_GLOBALS } from './snippet-globals.js';

const fixtures = fileURLToPath(new URL('./consumer', import.meta.url));
const manifest = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  exports: Record<string, string | Record<string, string>>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
const optionalPeers = Object.keys(manifest.peerDependencies).filter((p) => manifest.peerDependenciesMeta[p]?.optional);
const requiredPeers = Object.keys(manifest.peerDependencies).filter((p) => !optionalPeers.includes(p));
/** Beyond the peers: what the README's quick start imports, and Node's types for tsc. */
const appPackages = ['@nestjs/typeorm', '@types/node'];
/**
 * What the docs' snippets import besides: the testing page's test runner and Nest's testing module,
 * and the OpenTelemetry metrics SDK of the monitoring page.
 */
const docsPackages = ['@nestjs/testing', 'vitest', '@opentelemetry/sdk-metrics'];
/** The README's files that must be among the compiled ones (each block starting with `// <file>.ts`). */
const QUICK_START = ['app.module.ts', 'send-receipt.job.ts', 'orders.controller.ts'];
/**
 * The TypeScript `npm i -D typescript` installs today, installed into the consumer project as a user
 * gets it. Not a devDependency here: its package's bin is `tsc` too, and npm would link one of the
 * two over the other in node_modules/.bin. TypeScript 6 (this repository's) is run beside it.
 */
const TYPESCRIPT_7 = '7.0.2';

type Compiler = 6 | 7;

/** tsc of TypeScript 6 (this repository's) or 7 (the consumer's own, as a user installs it). */
function tsc(project: string, cwd: string, version: Compiler = 6): Promise<Run> {
  const bin =
    version === 6
      ? path.join(repo, 'node_modules/typescript/bin/tsc')
      : path.join(cwd, 'node_modules/typescript/bin/tsc');
  return run(process.execPath, [bin, '-p', project, '--pretty', 'false'], cwd);
}

async function link(project: string, packages: string[]): Promise<void> {
  for (const name of packages) {
    const target = path.join(project, 'node_modules', name);
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.symlink(path.join(repo, 'node_modules', name), target, 'dir');
  }
}

/**
 * The ```ts blocks of a Markdown page, as files to compile (the convention of
 * docs/contributing/index.md, "Writing the docs"): a block whose first line is
 * `// <name>.ts` is that file; any other is a module of its own named by its
 * fence's line in the page (`line-42.ts`), compiled with the globals of
 * snippet-globals.ts; a ```ts no-check block is left out.
 */
function snippetFiles(page: string, markdown: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const match of markdown.matchAll(/^( *)```ts([^\n]*)\n([\s\S]*?)^\1```$/gm)) {
    const [, indent, info, body] = match as unknown as [string, string, string, string];
    if (/\bno-check\b/.test(info)) continue;
    const code = body.replace(new RegExp(`^${indent}`, 'gm'), '');
    const line = markdown.slice(0, match.index).split('\n').length;
    const name = /^\/\/ ([\w.-]+\.ts)\n/.exec(code)?.[1];
    if (name && files.has(name)) throw new Error(`${page} has two blocks named ${name}`);
    // `export {}` makes a fragment a module: top-level await works, and its names stay its own.
    files.set(name ?? `line-${line}.ts`, name ? code : `${code}\nexport {};\n`);
  }
  return files;
}

/** Every Markdown page of the docs site, by its path under docs/ (the generated API pages are not in git). */
function docsPages(dir: string, under = ''): string[] {
  return readdirSync(path.join(dir, under), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(under, e.name);
    if (e.isDirectory()) return e.name.startsWith('.') || e.name === 'public' ? [] : docsPages(dir, rel);
    return e.name.endsWith('.md') ? [rel] : [];
  });
}

/**
 * A Nest 12 app's settings, strict. `libCheck` also checks the declarations
 * (ours among them: an import of a package the user lacks shows only there);
 * apps skip that, and it triples the time.
 */
function tsconfig(resolution: 'nodenext' | 'bundler', libCheck: boolean): string {
  return JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      lib: ['ES2023'],
      ...(resolution === 'nodenext'
        ? { module: 'nodenext', moduleResolution: 'nodenext' }
        : { module: 'preserve', moduleResolution: 'bundler' }),
      strict: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      skipLibCheck: !libCheck,
      noEmit: true,
      types: ['node'],
    },
    include: ['src'],
  });
}

let work: string;
let consumer: string;
let packed: Packed;
const schema = uniqueSchema('package');

beforeAll(async () => {
  work = await fs.mkdtemp(path.join(os.tmpdir(), 'jobs-package-'));
  packed = await packWorkingTree(work);

  consumer = path.join(work, 'consumer');
  await fs.mkdir(path.join(consumer, 'src'), { recursive: true });
  await fs.writeFile(
    path.join(consumer, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  succeeded(
    'npm install of the tarball',
    await npm(
      [
        'install',
        packed.tarball,
        '--prefer-offline',
        '--ignore-scripts',
        // The peers are linked below, from this repository.
        '--legacy-peer-deps',
        '--no-package-lock',
        '--no-audit',
        '--no-fund',
        `typescript@${TYPESCRIPT_7}`,
      ],
      consumer,
    ),
  );
  await link(consumer, [...requiredPeers, ...appPackages]);
}, 180_000);

afterAll(async () => {
  await dropSchemas(schema);
  if (work) await fs.rm(work, { recursive: true, force: true });
});

describe('npm pack', () => {
  it('holds the built library (code, declarations, migrations), the docs pages, README, LICENSE, CHANGELOG and nothing else', () => {
    const files = [...packed.files].sort();
    // The guides and the reference, which the README links to; not the contributors' pages.
    const pages = ['guide', 'reference'].flatMap((dir) =>
      readdirSync(path.join(repo, 'docs', dir))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${dir}/${f}`),
    );
    expect(files.filter((f) => !f.startsWith('dist/lib/'))).toEqual(
      ['CHANGELOG.md', 'LICENSE', 'README.md', ...pages, 'package.json'].sort(),
    );

    const sources = (dir: string): string[] =>
      readdirSync(path.join(repo, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sources(path.join(dir, e.name)) : [path.join(dir, e.name)],
      );
    const lib = sources('lib');
    const missing = lib.flatMap((file) => {
      const out = `dist/${file}`;
      const wanted = file.endsWith('.ts') ? [out.replace(/\.ts$/, '.js'), out.replace(/\.ts$/, '.d.ts')] : [out];
      return wanted.filter((f) => !files.includes(f));
    });
    expect(missing).toEqual([]);
    expect(lib.filter((f) => f.endsWith('.sql')).length).toBeGreaterThan(0);

    // Each entry point's targets (the `types`, `import` and `default` conditions).
    const targets = Object.values(manifest.exports).flatMap((t) => (typeof t === 'string' ? [t] : Object.values(t)));
    expect(targets.map((t) => t.replace(/^\.\//, '')).filter((t) => !files.includes(t))).toEqual([]);
  });
});

describe('the README in the package (what the npm page shows)', () => {
  /** Its links and images: `[text](target)` and `![alt](target)`, outside code. */
  function links(markdown: string): string[] {
    const prose = markdown.replace(/^```[\s\S]*?^```$/gm, '').replace(/`[^`\n]*`/g, '');
    return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
  }

  /** A heading's anchor as GitHub and npm make it. */
  const slug = (heading: string) =>
    heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s-]/gu, '')
      .replace(/\s/g, '-');

  it('links only to files in the package, its own headings, or absolute URLs', () => {
    const readme = readFileSync(path.join(consumer, 'node_modules', manifest.name, 'README.md'), 'utf8');
    const found = links(readme);
    expect(found.length).toBeGreaterThan(10);
    const headings = [...readme.matchAll(/^#+ (.+)$/gm)].map((m) => slug(m[1]!));
    const dead = found.filter((target) => {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return false;
      const [file, fragment] = target.split('#') as [string, string | undefined];
      if (file === '') return !headings.includes(fragment!);
      return !packed.files.includes(path.posix.normalize(file));
    });
    expect(dead).toEqual([]);
  });
});

/**
 * The files a module of the installed package loads, itself included: its relative static
 * imports and re-exports, and its dynamic imports of a literal path, followed to their end.
 */
function importGraph(entry: string): string[] {
  const seen = new Set<string>();
  const pending = [entry];
  const specifiers =
    /(?:^|[;\s])(?:import|export)\s[^;]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\s*(?:\(\s*)?['"](\.{1,2}\/[^'"]+)['"]/g;
  while (pending.length) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const [, from, bare] of readFileSync(file, 'utf8').matchAll(specifiers)) {
      pending.push(path.resolve(path.dirname(file), (from ?? bare)!));
    }
  }
  return [...seen];
}

describe('installed into a new project with the required peers only', () => {
  it('lacks the optional peers, so what follows proves the main entry needs none of them', () => {
    expect(optionalPeers.filter((p) => existsSync(path.join(consumer, 'node_modules', p)))).toEqual([]);
    expect(existsSync(path.join(consumer, 'node_modules', manifest.name, 'package.json'))).toBe(true);
  });

  it('boots a Nest app that runs a job through the worker on the migrated schema', async () => {
    await fs.copyFile(path.join(fixtures, 'run-job.mjs'), path.join(consumer, 'run-job.mjs'));
    const result = succeeded(
      'run-job.mjs',
      await run(process.execPath, ['run-job.mjs'], consumer, { DATABASE_URL: databaseUrl(), JOBS_SCHEMA: schema }),
    );
    const migrations = readdirSync(path.join(repo, 'lib/storage/migrations')).filter((f) =>
      /^\d{4}-[a-z0-9-]+\.sql$/.test(f),
    );
    expect(JSON.parse(result.stdout.trim().split('\n').at(-1)!)).toEqual({
      state: 'succeeded',
      result: { doubled: 42 },
      migrations: migrations.length,
    });
  });

  it('loads no file of the dashboard from the main entry; the /dashboard entry does', () => {
    const installed = path.join(consumer, 'node_modules', manifest.name);
    const dashboard = path.join(installed, 'dist/lib/dashboard') + path.sep;
    const entry = (name: string) => {
      const target = manifest.exports[name] as Record<string, string>;
      return path.join(installed, target.import!);
    };
    const main = importGraph(entry('.'));
    // Followed far enough to mean something: the main entry reaches the module and the admin.
    expect(main.some((f) => f.endsWith('/dist/lib/jobs.module.js'))).toBe(true);
    expect(main.some((f) => f.endsWith('/dist/lib/admin/jobs-error.filter.js'))).toBe(true);
    expect(main.filter((f) => f.startsWith(dashboard))).toEqual([]);
    const fromDashboard = importGraph(entry('./dashboard')).filter((f) => f.startsWith(dashboard));
    expect(fromDashboard.map((f) => path.relative(dashboard, f))).toEqual(
      expect.arrayContaining(['jobs-dashboard.module.js', 'controllers/page.controller.js', 'page/page-assets.js']),
    );
    // The page's files ship beside the compiled dashboard, where page-assets.js reads them.
    expect(readdirSync(path.join(dashboard, 'assets')).sort()).toEqual(
      readdirSync(path.join(repo, 'lib/dashboard/assets')).sort(),
    );
  });

  it('has TypeScript 7 installed, as `npm i -D typescript` gives it', async () => {
    const result = succeeded(
      'tsc --version',
      await run(process.execPath, [path.join(consumer, 'node_modules/typescript/bin/tsc'), '--version'], consumer),
    );
    expect(result.stdout.trim()).toBe(`Version ${TYPESCRIPT_7}`);
  });

  it.each([6, 7] as const)(
    "compiles the README's quick start and an app against the installed declarations with TypeScript %i (nodenext)",
    async (version) => {
      const readme = snippetFiles(
        'README.md',
        readFileSync(path.join(consumer, 'node_modules', manifest.name, 'README.md'), 'utf8'),
      );
      expect(QUICK_START.filter((name) => !readme.has(name))).toEqual([]);
      await fs.mkdir(path.join(consumer, 'src/readme'), { recursive: true });
      for (const name of QUICK_START) await fs.writeFile(path.join(consumer, 'src/readme', name), readme.get(name)!);
      await fs.copyFile(path.join(fixtures, 'uses-types.ts'), path.join(consumer, 'src/uses-types.ts'));
      await fs.writeFile(path.join(consumer, 'tsconfig.json'), tsconfig('nodenext', true));
      const result = await tsc('tsconfig.json', consumer, version);
      expect({ code: result.code, output: result.stdout + result.stderr }).toEqual({ code: 0, output: '' });
    },
  );
});

describe('installed with the optional peers too', () => {
  beforeAll(async () => {
    await link(consumer, optionalPeers);
    await fs.copyFile(path.join(fixtures, 'entries.ts'), path.join(consumer, 'src/entries.ts'));
    await fs.copyFile(path.join(fixtures, 'entries.mjs'), path.join(consumer, 'entries.mjs'));
  });

  it('imports every entry point: nestjs-durable-jobs, /dashboard, /health, /metrics, /testing and /package.json', async () => {
    const result = succeeded('entries.mjs', await run(process.execPath, ['entries.mjs'], consumer));
    expect(JSON.parse(result.stdout)).toEqual({
      main: {
        JobsModule: 'function',
        Job: 'function',
        OnJobEvent: 'function',
        JobQueue: 'function',
        JobEvents: 'function',
        JobsMonitor: 'function',
        JobsErrorFilter: 'function',
      },
      mainHasDashboard: false,
      dashboard: { JobsDashboardModule: 'function' },
      // The page's files, found beside the compiled controller in the installed package.
      assets: {
        'dashboard.js': { type: 'text/javascript; charset=utf-8', first: '// @ts-check' },
        'views.css': { type: 'text/css; charset=utf-8', first: expect.stringMatching(/^\/\* /) },
      },
      health: { JobsHealthIndicator: 'function' },
      metrics: { JobsMetrics: 'function', JOBS_METRICS_REGISTRY: 'symbol' },
      testing: { ManualClock: 'function' },
      version: manifest.version,
    });
  });

  it.each([
    ['nodenext', false],
    ['bundler', true],
  ] as const)(
    'compiles against every entry point with moduleResolution %s (declarations checked: %s)',
    async (resolution, libCheck) => {
      const project = `tsconfig.${resolution}.json`;
      await fs.writeFile(path.join(consumer, project), tsconfig(resolution, libCheck));
      const result = await tsc(project, consumer);
      expect({ code: result.code, output: result.stdout + result.stderr }).toEqual({ code: 0, output: '' });
    },
  );

  describe('every ```ts block of the docs pages and the README', () => {
    let blocks = 0;

    beforeAll(async () => {
      await link(consumer, docsPackages);
      const root = path.join(consumer, 'snippets');
      const pages = docsPages(path.join(packed.source, 'docs')).map((page) => ({
        page: `docs/${page}`,
        markdown: readFileSync(path.join(packed.source, 'docs', page), 'utf8'),
      }));
      pages.push({ page: 'README.md', markdown: readFileSync(path.join(packed.source, 'README.md'), 'utf8') });
      for (const { page, markdown } of pages) {
        // A page's files share a folder, so `./x.js` reaches the page's own x.ts.
        const dir = path.join(root, page.replace(/\.md$/, ''));
        for (const [name, code] of snippetFiles(page, markdown)) {
          await fs.mkdir(dir, { recursive: true });
          await fs.writeFile(path.join(dir, name), code);
          blocks++;
        }
      }
      await fs.writeFile(path.join(root, 'globals.d.ts'), SNIPPET_GLOBALS);
      const config = JSON.parse(tsconfig('nodenext', false)) as { include: string[] };
      await fs.writeFile(
        path.join(consumer, 'tsconfig.snippets.json'),
        JSON.stringify({ ...config, include: ['snippets'] }),
      );
    });

    it('finds them: the pages hold dozens', () => {
      expect(blocks).toBeGreaterThan(30);
    });

    it.each([6, 7] as const)('type-checks them against the package with TypeScript %i', async (version) => {
      const result = await tsc('tsconfig.snippets.json', consumer, version);
      // Paths in the output name the page and the block: snippets/docs/guide/jobs/line-59.ts is the block
      // whose fence is line 59 of docs/guide/jobs.md, so its line 1 is the page's line 60.
      expect({ code: result.code, output: result.stdout + result.stderr }).toEqual({ code: 0, output: '' });
    });
  });
});
