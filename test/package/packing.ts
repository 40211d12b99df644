/**
 * What the package tests share: running commands to their end, and `npm pack`
 * of the working tree as a fresh clone would pack it (the files git tracks or
 * would, no dist/), so the tarball is the one a release publishes.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root. */
export const repo = fileURLToPath(new URL('../..', import.meta.url));

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; a non-zero exit is returned, not thrown, so a test can show the output. */
export function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  // What `npm test` sets for itself (npm_config_*, npm_package_*) must not steer the npm run here.
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env: { ...clean, ...env }, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** npm, run by the first `node` on the PATH of `env` (npm's engine checks read that Node's version). */
export function npm(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return run(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, cwd, env);
}

/** Fails with the command's output, so that a failure says why. */
export function succeeded(what: string, result: Run): Run {
  if (result.code !== 0) {
    throw new Error(`${what} exited with ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`);
  }
  return result;
}

export interface Packed {
  /** The tarball's absolute path. */
  tarball: string;
  /** The files in it, by their path in the package. */
  files: string[];
  /** The copy of the working tree it was packed from (its docs/ and README.md are the packed ones). */
  source: string;
}

/**
 * `npm pack` of a copy of the working tree with no dist/ (as a fresh clone has), into `work`: the
 * prepack script builds it. The copy's node_modules is this repository's, linked.
 */
export async function packWorkingTree(work: string): Promise<Packed> {
  const source = path.join(work, 'source');
  const listed = succeeded(
    'git ls-files',
    await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], repo),
  );
  for (const file of listed.stdout.split('\0').filter(Boolean)) {
    // A file deleted but not yet committed is listed and absent.
    if (!existsSync(path.join(repo, file))) continue;
    await fs.mkdir(path.dirname(path.join(source, file)), { recursive: true });
    await fs.copyFile(path.join(repo, file), path.join(source, file));
  }
  await fs.symlink(path.join(repo, 'node_modules'), path.join(source, 'node_modules'), 'dir');
  const pack = succeeded('npm pack', await npm(['pack', '--json', '--pack-destination', work], source));
  const [packed] = JSON.parse(pack.stdout) as [{ filename: string; files: Array<{ path: string }> }];
  return { tarball: path.join(work, packed.filename), files: packed.files.map((f) => f.path), source };
}
