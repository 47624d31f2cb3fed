// The whole command line, read by yargs: every command's flags and --help, and one-line
// usage errors. dispatch.ts sends here every line its quick parser does not take.
import yargs, { type Argv } from 'yargs';
import { VERSION } from '../version.js';
import type { CommandResult } from './exit-codes.js';
import { COMMANDS, CONFLICTS, EnvError, envValues, usageError, withOptions, type Command } from './options.js';

export type Handler = (argv: Record<string, unknown>) => Promise<CommandResult>;

const NAMED = `name a command: ${COMMANDS.slice(0, -1).join(', ')} or ${COMMANDS.at(-1)}`;

/** The command's flags, with its OVN_GWMODE_* variables under them; a misspelt variable is a usage error. */
const options = (command: Command) => (y: Argv) => {
  let withFlags: Argv;
  try {
    withFlags = withOptions(y, command, envValues(command, process.env));
  } catch (err) {
    if (err instanceof EnvError) usageError(err.message);
    throw err;
  }
  for (const [a, b] of CONFLICTS[command] ?? []) withFlags = withFlags.conflicts(a, b);
  return withFlags;
};

/**
 * yargs' complaint, made one line that names what was wrong. Its "Unknown arguments"
 * lists a flag under both spellings (bogus-flag, bogusFlag) and does not tell a flag
 * from a stray word, so the words are looked up in what was typed.
 */
function explain(args: string[], message: string): string {
  const m = /^Unknown arguments?: (.*)$/.exec(message);
  if (!m) return message;
  const typed = new Set(args.filter((a) => a.startsWith('-')).map((a) => a.replace(/^-+/, '').split('=')[0]));
  const names = m[1]!.split(', ');
  const flags = names.filter((n) => typed.has(n)).map((n) => (n.length === 1 ? `-${n}` : `--${n}`));
  if (flags.length > 0) return `unknown flag${flags.length > 1 ? 's' : ''} ${flags.join(', ')}`;
  const command = args.find((a) => !a.startsWith('-'));
  if (command !== undefined && !(COMMANDS as readonly string[]).includes(command)) return `unknown command "${command}": ${NAMED}`;
  return `unexpected argument${names.length > 1 ? 's' : ''} ${names.map((n) => `"${n}"`).join(', ')}`;
}

const DESCRIBE: Record<Command, string> = {
  run: 'run the agent: watch the mode file and the kernel, keep the service routes right',
  status: 'ask a running agent how the node is (exit 0 converged, 1 not, 2 unreachable)',
  health: 'the liveness (or, with --ready, readiness) probe: exit 0 yes, 1 no, 2 unreachable',
  plan: 'observe once and print what the agent would do (exit 0 when nothing is to do)',
  apply: 'observe once, carry the plan out and verify (exit 0 when nothing is left to do)',
  rollback: "print how the journal's last migration would be put back; with --yes, put it back (exit 0 done, 1 refused)",
  events: 'what the agent did on this node, oldest first (its last 256 events)',
};

/** Parses args with yargs and runs the command's handler; --help and --version are exit 0. */
export async function parseWithYargs(args: string[], handlers: Record<Command, Handler>): Promise<CommandResult> {
  let result: CommandResult = { code: 0 };
  let y = yargs(args).scriptName('ovn-gwmode-agent');
  for (const command of COMMANDS) y = y.command(command, DESCRIBE[command], options(command), async (argv) => void (result = await handlers[command](argv)));
  await y
    .demandCommand(1, NAMED)
    .strict()
    .version(VERSION)
    .help()
    .fail((msg, err) => {
      if (err) throw err;
      usageError(explain(args, msg));
    })
    .parseAsync();
  return result;
}
