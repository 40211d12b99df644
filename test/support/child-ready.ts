import type { ChildProcess } from 'node:child_process';

/** The worker id a child process prints as "ready <id>" once its app runs; rejects if it exits first. */
export function readyWorkerId(child: ChildProcess, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /ready (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`${what} exited early with ${code}: ${out}`)));
  });
}
