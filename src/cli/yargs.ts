// The whole command line, read by yargs: every command's flags and --help (options.ts
// declares them), one-line usage errors, and the handler each command runs.
import yargs, { type Argv } from 'yargs';
import type { RawRunOptions } from '../config/settings.js';
import { VERSION } from '../version.js';
import type { PlanOptions, RollbackOptions } from './commands.js';
import { failure, UsageError, type CommandResult, type ExitCode } from './exit-codes.js';
import {
  COMMAND_SPECS,
  COMMANDS,
  envValues,
  EXIT_STATUS,
  normalizeBooleanFlags,
  withOptions,
  type Command,
} from './options.js';

export type Handler = (argv: Record<string, unknown>) => Promise<CommandResult>;

// The commands that touch the kernel are imported when they run: the probes (`health`,
// `status`) load neither the addon nor netlink nor the logger. yargs' argv carries each
// flag camelCased, as the commands' options name them.
const kernel = () => import('./commands.js');
const ask = () => import('./ask.js');

export const HANDLERS: Record<Command, Handler> = {
  run: async (argv) => (await kernel()).runCommand(argv as unknown as RawRunOptions),
  status: async (argv) =>
    argv.watch === true
      ? (await ask()).watchCommand(argv as { socket: string })
      : (await ask()).statusCommand(argv as { socket: string; json?: boolean; brief?: boolean }),
  health: async (argv) => (await ask()).healthCommand(argv as { socket: string; ready: boolean }),
  plan: async (argv) => (await kernel()).planCommand(argv as unknown as PlanOptions),
  apply: async (argv) => (await kernel()).applyCommand(argv as unknown as PlanOptions & { stateDir: string }),
  rollback: async (argv) => (await kernel()).rollbackCommand(argv as unknown as RollbackOptions),
  events: async (argv) => (await ask()).eventsCommand(argv as { socket: string; json?: boolean; since?: string }),
};

const NAMED = `name a command: ${COMMANDS.slice(0, -1).join(', ')} or ${COMMANDS.at(-1)}`;

/** The exit codes, as --help ends: `exit status: 0 ...; 1 ...`. */
const exitStatus = (exits: Partial<Record<ExitCode, string>>) =>
  `exit status: ${Object.entries(exits)
    .map(([code, meaning]) => `${code} ${meaning}`)
    .join('; ')}`;

/** The command's flags, with its OVN_GWMODE_* variables under them; a misspelt variable is a usage error. */
const options = (command: Command) => (y: Argv) => {
  let withFlags = withOptions(y, command, envValues(command, process.env));
  for (const [a, b] of COMMAND_SPECS[command].conflicts ?? []) withFlags = withFlags.conflicts(a, b);
  return withFlags.epilogue(exitStatus(COMMAND_SPECS[command].exits));
};

/**
 * yargs' complaint, made one line that names what was wrong. Its "Unknown arguments"
 * lists a flag under both spellings (bogus-flag, bogusFlag) and does not tell a flag
 * from a stray word, so the words are looked up in what was typed.
 */
function explain(args: string[], message: string): string {
  const names = /^Unknown arguments?: (.*)$/.exec(message)?.[1]?.split(', ');
  if (names === undefined) return message;
  const typed = new Set(args.filter((a) => a.startsWith('-')).map((a) => a.replace(/^-+/, '').split('=')[0]));
  const flags = names.filter((n) => typed.has(n)).map((n) => (n.length === 1 ? `-${n}` : `--${n}`));
  if (flags.length > 0) return `unknown flag${flags.length > 1 ? 's' : ''} ${flags.join(', ')}`;
  const command = args.find((a) => !a.startsWith('-'));
  if (command !== undefined && !(COMMANDS as readonly string[]).includes(command))
    return `unknown command "${command}": ${NAMED}`;
  return `unexpected argument${names.length > 1 ? 's' : ''} ${names.map((n) => `"${n}"`).join(', ')}`;
}

/** What --help ends with besides the exit codes: where the rest is, also from a clone, where `man NAME` finds nothing. */
const MORE =
  'every command and flag: man ovn-gwmode-agent\nfrom a clone: man ./packaging/man/ovn-gwmode-agent.8 (or docs/cli.md)';

/** Parses args with yargs and runs the command's handler; --help and --version are exit 0. */
export async function parseWithYargs(
  given: string[],
  handlers: Record<Command, Handler> = HANDLERS,
): Promise<CommandResult> {
  let result: CommandResult = { code: 0 };
  const args = normalizeBooleanFlags(given);
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
    .version('version', 'print the version', VERSION)
    .help('help', 'show this help')
    .fail((msg, err) => {
      if (err) throw err;
      throw new UsageError(explain(args, msg));
    })
    .parseAsync();
  return result;
}

/** The command line's result: a typed error that escaped the command is mapped here (exit-codes.ts); any other is a bug and thrown. */
export function commandLine(args: string[]): Promise<CommandResult> {
  return parseWithYargs(args).catch((err: unknown) => failure(err));
}
