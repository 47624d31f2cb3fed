// What a command line loads, decided here and nowhere else.
//
// Start-up is most of what a probe costs: on a 2-core node `node -e 0` takes about 0.1 s,
// and importing yargs alone another 80 ms and 13 MB. So:
//  - each command imports its own module when it runs: the socket clients (ask.ts) never
//    load netlink, the CRI client, the logger or the metrics;
//  - a plain command line (quickParse) is read with node:util's parseArgs, into the very
//    values yargs would give; every other line, --help and --version included, goes to
//    yargs (yargs.ts), which reads it or says what is wrong.
import type { RawRunOptions } from '../config/settings.js';
import type { PlanOptions, RollbackOptions } from './commands.js';
import { failure, UsageError, type CommandResult } from './exit-codes.js';
import {
  COMMAND_OPTIONS,
  COMMANDS,
  CONFLICTS,
  envValues,
  EnvError,
  FlagValueError,
  normalizeBooleanFlags,
  type Command,
} from './options.js';
import type { Handler } from './yargs.js';
import { requireModule } from '../require.js';

const { parseArgs } = requireModule('node:util') as typeof import('node:util');

export type Argv = Record<string, unknown>;

const text = (v: unknown) => v as string;

/** Each command's handler, importing what the command needs when it runs. */
export const HANDLERS: Record<Command, Handler> = {
  run: async (argv) => (await import('./commands.js')).runCommand(argv as unknown as RawRunOptions),
  status: async (argv) =>
    argv.watch === true
      ? (await import('./watch.js')).watchCommand({ socket: text(argv.socket) })
      : (await import('./ask.js')).statusCommand({
          socket: text(argv.socket),
          json: argv.json === true,
          brief: argv.brief === true,
        }),
  health: async (argv) =>
    (await import('./ask.js')).healthCommand({ socket: text(argv.socket), ready: argv.ready === true }),
  plan: async (argv) => (await import('./commands.js')).planCommand(argv as unknown as PlanOptions),
  apply: async (argv) =>
    (await import('./commands.js')).applyCommand(argv as unknown as PlanOptions & { stateDir: string }),
  rollback: async (argv) => (await import('./commands.js')).rollbackCommand(argv as unknown as RollbackOptions),
  events: async (argv) =>
    (await import('./ask.js')).eventsCommand({
      socket: text(argv.socket),
      json: argv.json === true,
      since: argv.since as string | undefined,
    }),
};

type Kind = { type: 'string' | 'boolean'; multiple: boolean };

/** A variable's value as yargs gives it for a flag of that kind; undefined where the quick parser leaves it to yargs. */
function fromVariable(kind: Kind, value: string): unknown {
  if (kind.multiple) return [value];
  if (kind.type === 'string') return value;
  return value === 'true' ? true : value === 'false' ? false : undefined;
}

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * The command and its flags (defaults, then variables, then the line; each under both
 * spellings, mode-file and modeFile), as yargs gives them, when the line is a plain one:
 * a command, then its own flags, each at most once unless repeatable, with no conflict,
 * no stray word, no '-' and no value that starts with '-', and no misspelt variable.
 * null for yargs to read.
 */
export function quickParse(args: readonly string[], env: NodeJS.ProcessEnv): { command: Command; argv: Argv } | null {
  const command = COMMANDS.find((c) => c === args[0]);
  if (command === undefined) return null;
  // parseArgs takes a lone '-' as a flag's value (`--socket -`) where yargs refuses it as
  // an unexpected argument; a value that looks like a flag is yargs's to judge too.
  if (args.includes('-')) return null;
  const kinds: Record<string, Kind> = {};
  const values: Argv = {};
  for (const [flag, o] of Object.entries(COMMAND_OPTIONS[command])) {
    if (o.type !== 'string' && o.type !== 'boolean') return null;
    kinds[flag] = { type: o.type, multiple: o.array === true };
    if (o.default !== undefined) values[flag] = o.default;
  }
  let given;
  let variables: Record<string, string>;
  try {
    given = parseArgs({ args: args.slice(1), options: kinds, strict: true, allowPositionals: false, tokens: true });
    variables = envValues(command, env);
  } catch (err) {
    if (err instanceof EnvError || (err as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS_')) return null;
    throw err;
  }
  if (given.tokens.some((t) => t.kind === 'option' && t.value?.startsWith('-') === true)) return null;
  const named = given.tokens.flatMap((t) => (t.kind === 'option' ? [t.name] : []));
  if (named.some((flag, i) => !kinds[flag]!.multiple && named.indexOf(flag) !== i)) return null;
  if ((CONFLICTS[command] ?? []).some(([a, b]) => named.includes(a) && named.includes(b))) return null;
  for (const [flag, text] of Object.entries(variables)) {
    const value = fromVariable(kinds[flag]!, text);
    if (value === undefined) return null;
    values[flag] = value;
  }
  Object.assign(values, given.values);
  for (const [flag, value] of Object.entries(values)) values[camel(flag)] = value;
  return { command, argv: values };
}

/**
 * Runs the command line args. Boolean values are spelt out first (normalizeBooleanFlags):
 * neither parser reads `--dry-run=1` as true, and yargs takes it silently as false.
 */
export async function dispatch(given: string[], handlers: Record<Command, Handler> = HANDLERS): Promise<CommandResult> {
  let args: string[];
  try {
    args = normalizeBooleanFlags(given);
  } catch (err) {
    if (err instanceof FlagValueError) throw new UsageError(err.message);
    throw err;
  }
  const quick = quickParse(args, process.env);
  if (quick !== null) return handlers[quick.command](quick.argv);
  const { parseWithYargs } = await import('./yargs.js');
  return parseWithYargs(args, handlers);
}

/** The command line's result: a typed error that escaped the command is mapped here (exit-codes.ts); any other is a bug and thrown. */
export function commandLine(args: string[]): Promise<CommandResult> {
  return dispatch(args).catch((err: unknown) => failure(err));
}
