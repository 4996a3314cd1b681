/**
 * An error of the command line itself (not of a run). `usage` errors (a missing argument, an
 * unknown option, a value that does not parse) exit with 2, the others with 1.
 */
export class CliError extends Error {
  readonly exitCode: 1 | 2;

  constructor(message: string, options: { usage?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CliError";
    this.exitCode = options.usage ? 2 : 1;
  }
}

/** A problem with the command line: exit code 2. */
export function usageError(message: string): CliError {
  return new CliError(message, { usage: true });
}
