import type { OptionSpecs, ParsedCommand } from './cli-args.js';
import type { CliTarget } from './cli-context.js';
import type { CliOutput } from './cli-output.js';

/** What a command is given: its output, and where to work (read on demand: `--help` needs no database). */
export interface CliIo {
  out: CliOutput;
  target(): CliTarget;
}

export interface CliCommand {
  name: string;
  /** Arguments and options after the name, for the help. */
  usage: string;
  summary: string;
  /** More for the command's own --help: its options, their defaults. */
  details?: string;
  options?: OptionSpecs;
  run(parsed: ParsedCommand, io: CliIo): Promise<void>;
}
