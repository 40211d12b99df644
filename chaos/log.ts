import fs from 'node:fs';

/**
 * The run's detailed log (worker output, PostgreSQL's warnings, every fault
 * injected), kept out of the terminal so that the report stays readable.
 */
export class RunLog {
  private readonly stream: fs.WriteStream;

  constructor(
    readonly path: string,
    private readonly echo: boolean,
  ) {
    this.stream = fs.createWriteStream(path, { flags: 'w' });
  }

  write(source: string, text: string): void {
    const at = new Date().toISOString();
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      const entry = `${at} ${source} ${line}\n`;
      this.stream.write(entry);
      if (this.echo) process.stderr.write(entry);
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.stream.end(resolve));
  }
}
