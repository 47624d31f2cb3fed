// What a command returns, and the one table from typed errors to exit codes. Commands
// return a CommandResult and never end the process; main.ts writes the result and exits
// with its code, and is the only place that does. The table goes by each error's stable
// `code` (never its class): the code is the error's contract, and so this module imports
// none of the modules that raise them.
//   0 done, converged, or nothing to do
//   1 not converged, refused, failed or interrupted, or another agent holds the node
//   2 bad usage or configuration, a permission or a writable directory missing, the
//     agent unreachable: a person must change something before trying again
export type ExitCode = 0 | 1 | 2;

export interface CommandResult {
  readonly code: ExitCode;
  /** Written to stdout as it is (a command's output ends with a newline). */
  readonly stdout?: string;
  /** Written to stderr after stdout: one line per problem, each `ovn-gwmode-agent: ...`. */
  readonly stderr?: string;
}

/** A command line that cannot be run as given: one line ending "see --help", exit 2. */
export class UsageError extends Error {
  readonly code = 'ERR_GWMODE_USAGE';
}

/** A refusal whose exit code is decided where it is raised (no other error says it better). */
export class CommandError extends Error {
  readonly code = 'ERR_GWMODE_COMMAND';
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
  }
}

const EXIT_CODES = new Map<string, ExitCode>([
  ['ERR_GWMODE_USAGE', 2],
  ['ERR_GWMODE_ENV', 2],
  ['ERR_GWMODE_FLAG_VALUE', 2],
  ['ERR_GWMODE_CONFIG', 2],
  ['ERR_GWMODE_LOCK', 2],
  ['ERR_GWMODE_STATE_DIR_UNWRITABLE', 2],
  ['ERR_GWMODE_SOCKET_PERMISSION', 2],
  ['ERR_GWMODE_METRICS_ADDRESS', 2],
  ['ERR_GWMODE_UNREACHABLE', 2],
  ['ERR_GWMODE_SOCKET_DENIED', 2],
  ['ERR_GWMODE_JOURNAL', 2],
  ['ERR_GWMODE_ROLLBACK_CIDRS', 2],
  // Another agent has the node: not this machine's fault, and not ours to fix.
  ['ERR_GWMODE_LOCK_HELD', 1],
  ['ERR_GWMODE_SOCKET_IN_USE', 1],
]);

/** Refusals because another agent has the node: their line says why this command does not go on. */
const ANOTHER_AGENT = new Set(['ERR_GWMODE_LOCK_HELD', 'ERR_GWMODE_SOCKET_IN_USE']);

/** An error with a stable `code`: the only kind the table reads. */
const isTyped = (err: unknown): err is Error & { code: string } =>
  err instanceof Error && typeof (err as { code?: unknown }).code === 'string';

/** The exit code a typed error means, or null for an error no table names (a bug: let it surface). */
export function exitCodeOf(err: unknown): ExitCode | null {
  if (err instanceof CommandError) return err.exitCode;
  return isTyped(err) ? (EXIT_CODES.get(err.code) ?? null) : null;
}

export interface FailureNotes {
  /** Why this command does not go on when another agent has the node (`not starting a second agent`). */
  held?: string;
  /** The command's name, put before the message (`apply: ...`). */
  what?: string;
}

/** The result a typed error means: its exit code and one line; null for an untyped one. */
export function failureOf(err: unknown, notes: FailureNotes = {}): CommandResult | null {
  const code = exitCodeOf(err);
  if (code === null || !isTyped(err)) return null;
  const typed = err.code;
  const held = notes.held !== undefined && ANOTHER_AGENT.has(typed) ? `; ${notes.held}` : '';
  const help = typed === 'ERR_GWMODE_USAGE' ? '; see --help' : '';
  return {
    code,
    stderr: `ovn-gwmode-agent: ${notes.what ? `${notes.what}: ` : ''}${err.message}${held}${help}\n`,
  };
}

/** failureOf, or the error thrown again when it is not one of ours. */
export function failure(err: unknown, notes: FailureNotes = {}): CommandResult {
  const r = failureOf(err, notes);
  if (r === null) throw err;
  return r;
}
