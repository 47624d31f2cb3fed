// What a command returns, and the one table from typed errors to exit codes (their meaning is
// options.ts's EXIT_STATUS), by each error's stable `code`, never its class: this module imports
// none of the modules that raise them. Commands never end the process: main.ts does.
export type ExitCode = 0 | 1 | 2;

export interface CommandResult {
  readonly code: ExitCode;
  /** Written to stdout as it is. */
  readonly stdout?: string;
  /** Written to stderr after stdout: one line per problem, each `ovn-gwmode-agent: ...`. */
  readonly stderr?: string;
}

/** A command line that cannot be run as given: one line ending "see --help", exit 2. */
export class UsageError extends Error {
  readonly code = 'ERR_GWMODE_USAGE';
}

/** Another agent has the node: exit 1, not this machine's fault, and not ours to fix. */
const ANOTHER_AGENT = ['ERR_GWMODE_LOCK_HELD', 'ERR_GWMODE_SOCKET_IN_USE'];
/** A person must change something first: exit 2; the first is the command line's (see --help). */
const PERSON = [
  'ERR_GWMODE_USAGE',
  'ERR_GWMODE_CONFIG',
  'ERR_GWMODE_LOCK',
  'ERR_GWMODE_STATE_DIR_UNWRITABLE',
  'ERR_GWMODE_SOCKET_PERMISSION',
  'ERR_GWMODE_METRICS_ADDRESS',
  'ERR_GWMODE_UNREACHABLE',
  'ERR_GWMODE_SOCKET_DENIED',
  'ERR_GWMODE_JOURNAL',
  'ERR_GWMODE_ROLLBACK_CIDRS',
];

const codeOf = (err: unknown): string => {
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : '';
};

/** The exit code a typed error means, or null for an error no table names (a bug: let it surface). */
export const exitCodeOf = (err: unknown): ExitCode | null =>
  ANOTHER_AGENT.includes(codeOf(err)) ? 1 : PERSON.includes(codeOf(err)) ? 2 : null;

/** `held`: why this command stops when another agent has the node; `what`: the command's name, put before the message. */
type FailureNotes = { held?: string; what?: string };

/** The result a typed error means: its exit code and one line; null for an untyped one. */
export function failureOf(err: unknown, notes: FailureNotes = {}): CommandResult | null {
  const code = exitCodeOf(err);
  if (code === null) return null;
  const typed = codeOf(err);
  const held = notes.held !== undefined && ANOTHER_AGENT.includes(typed) ? `; ${notes.held}` : '';
  const help = typed === 'ERR_GWMODE_USAGE' ? '; see --help' : '';
  const what = notes.what ? `${notes.what}: ` : '';
  return { code, stderr: `ovn-gwmode-agent: ${what}${(err as Error).message}${held}${help}\n` };
}

/** failureOf, or the error thrown again when it is not one of ours. */
export function failure(err: unknown, notes: FailureNotes = {}): CommandResult {
  const r = failureOf(err, notes);
  if (r === null) throw err;
  return r;
}
