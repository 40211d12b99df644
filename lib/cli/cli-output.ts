/** Where a command writes: its result on stdout, as text or (with --json) as one JSON document. */
export class CliOutput {
  constructor(
    private readonly stdout: NodeJS.WritableStream,
    readonly json: boolean,
  ) {}

  /** The result: `value` as JSON with --json, otherwise what `text` renders. */
  result<T>(value: T, text: (value: T) => string): void {
    this.stdout.write(this.json ? `${JSON.stringify(value, null, 2)}\n` : ensureNewline(text(value)));
  }
}

function ensureNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}

/** Columns padded to their widest cell; the last one is not padded. */
export function table(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** A time in UTC to the second, or '-' for none. */
export function time(value: Date | string | null | undefined): string {
  if (value === null || value === undefined) return '-';
  const date = typeof value === 'string' ? new Date(value) : value;
  return `${date.toISOString().slice(0, 19)}Z`;
}

/** One line of an error message, cut to `max` characters. */
export function short(text: string | null | undefined, max = 60): string {
  if (!text) return '';
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** `key  value` lines, keys aligned. */
export function fields(entries: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(...entries.map(([k]) => k.length));
  return entries.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
