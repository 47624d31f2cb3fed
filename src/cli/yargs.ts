// The whole command line, read by yargs: every command's flags and --help, and one-line
// usage errors. dispatch.ts sends here every line its quick parser does not take.
import yargs, { type Argv } from 'yargs';
import { VERSION } from '../version.js';
import type { CommandResult } from './exit-codes.js';
import { COMMANDS, CONFLICTS, EnvError, envValues, usageError, withOptions, type Command } from './options.js';
import { BUILTIN_FLAGS, COMMAND_SPECS, EXIT_STATUS, type ExitCode } from './reference.js';

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
  return withFlags.epilogue(exitStatus(COMMAND_SPECS[command].exits));
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
  if (command !== undefined && !(COMMANDS as readonly string[]).includes(command))
    return `unknown command "${command}": ${NAMED}`;
  return `unexpected argument${names.length > 1 ? 's' : ''} ${names.map((n) => `"${n}"`).join(', ')}`;
}

/** The exit codes, as --help ends: `exit status: 0 ...; 1 ...`. */
const exitStatus = (exits: Partial<Record<ExitCode, string>>) =>
  `exit status: ${Object.entries(exits)
    .map(([code, meaning]) => `${code} ${meaning}`)
    .join('; ')}`;

/** What --help ends with besides the exit codes: where the rest is, also from a clone, where `man NAME` finds nothing. */
const MORE =
  'every command and flag: man ovn-gwmode-agent\nfrom a clone: man ./packaging/man/ovn-gwmode-agent.8 (or docs/cli.md)';

/** Parses args with yargs and runs the command's handler; --help and --version are exit 0. */
export async function parseWithYargs(args: string[], handlers: Record<Command, Handler>): Promise<CommandResult> {
  let result: CommandResult = { code: 0 };
  let y = yargs(args).scriptName('ovn-gwmode-agent');
  for (const command of COMMANDS)
    y = y.command(
      command,
      COMMAND_SPECS[command].summary,
      options(command),
      async (argv) => void (result = await handlers[command](argv)),
    );
  await y
    .epilogue(`${exitStatus(EXIT_STATUS)}\n${MORE}`)
    .demandCommand(1, NAMED)
    .strict()
    .version('version', BUILTIN_FLAGS.version, VERSION)
    .help('help', BUILTIN_FLAGS.help)
    .fail((msg, err) => {
      if (err) throw err;
      usageError(explain(args, msg));
    })
    .parseAsync();
  return result;
}
