// The flags of each command as yargs takes them, made from
// reference.ts, and the OVN_GWMODE_* variables that stand for them.
//
// Each command declares only the flags it uses, so that its --help is true and yargs'
// strict mode catches a misplaced one. Every `run` flag can also come from
// OVN_GWMODE_<FLAG_IN_UPPER_SNAKE_CASE>; each command reads only the variables of its
// own flags and leaves the rest to the others, because one environment (a DaemonSet
// container's, /etc/default/ovn-gwmode-agent) serves `run` and the `health` probe alike.
import type { Argv, Options } from 'yargs';
import { UsageError } from './exit-codes.js';
import {
  COMMAND_SPECS,
  COMMANDS,
  ENV_PREFIX,
  FLAGS,
  SETTINGS_FLAGS,
  variableOf,
  type Command,
  type Flag,
  type FlagSpec,
} from './reference.js';

export { COMMANDS, DEFAULT_SOCKET, DEFAULT_STATE_DIR, ENV_PREFIX, type Command } from './reference.js';

type OptionSet = Record<string, Options>;

const CHOICES_MEANING = (choices: Readonly<Record<string, string>>) =>
  Object.entries(choices)
    .map(([c, meaning]) => (meaning ? `${c} (${meaning})` : c))
    .join(' | ');

/**
 * A flag as yargs declares it. Choices go into the description, not to yargs: its refusal
 * would not name the flag, and settings.ts checks them (reference.ts).
 */
export function yargsOption(spec: FlagSpec): Options {
  const describe = spec.choices ? `${spec.describe}: ${CHOICES_MEANING(spec.choices)}` : spec.describe;
  return {
    type: spec.type,
    describe,
    ...(spec.repeatable ? { array: true } : {}),
    ...(spec.default !== undefined ? { default: spec.default } : {}),
    ...(spec.defaultText !== undefined ? { defaultDescription: spec.defaultText } : {}),
  };
}

const optionSet = (flags: readonly Flag[]): OptionSet =>
  Object.fromEntries(flags.map((f) => [f, yargsOption(FLAGS[f])]));

export const COMMAND_OPTIONS = Object.fromEntries(
  COMMANDS.map((c) => [c, optionSet(COMMAND_SPECS[c].flags)]),
) as Record<Command, OptionSet>;

/** The flags that settings variables can stand for: exactly `run`'s. */
const SETTINGS: OptionSet = optionSet(SETTINGS_FLAGS);

/** Flags that must not be given together (yargs' `conflicts`). */
export const CONFLICTS: Partial<Record<Command, Array<[string, string]>>> = Object.fromEntries(
  COMMANDS.flatMap((c) => {
    const pairs = COMMAND_SPECS[c].conflicts;
    return pairs ? [[c, pairs.map(([a, b]): [string, string] => [a, b])]] : [];
  }),
);

/** OVN_GWMODE_MODE_FILE -> mode-file */
const flagOf = (variable: string): string => variable.slice(ENV_PREFIX.length).toLowerCase().replaceAll('_', '-');

export class EnvError extends Error {
  readonly code = 'ERR_GWMODE_ENV';
}

/** A boolean flag given a value that is no boolean: `--dry-run=maybe`. */
export class FlagValueError extends Error {
  readonly code = 'ERR_GWMODE_FLAG_VALUE';
}

const show = (text: string) => JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);

const TRUE_WORDS = ['true', '1', 'yes', 'on'];
const FALSE_WORDS = ['false', '0', 'no', 'off'];
export const BOOLEAN_SPELLINGS = 'true/false, 1/0, yes/no, on/off';

/**
 * A boolean's usual spellings, in any case; undefined for anything else. yargs takes only
 * `true` as true and everything else (`1`, `yes`, `True`) silently as false: a dry run
 * spelt `1` would act. So every boolean value is read here, and what is not one is refused.
 */
export function parseBoolean(text: string): boolean | undefined {
  const word = text.toLowerCase();
  if (TRUE_WORDS.includes(word)) return true;
  if (FALSE_WORDS.includes(word)) return false;
  return undefined;
}

const isBooleanFlag = (command: Command, flag: string): boolean => COMMAND_OPTIONS[command][flag]?.type === 'boolean';
const kebab = (flag: string) => flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * The command line with each value of a boolean flag (`--dry-run=1`, `--json yes`) spelt
 * `--flag=true` or `--flag=false`, which yargs reads right; a value that is no
 * boolean is a FlagValueError naming the flag. No command takes a positional argument,
 * so a boolean word after a boolean flag can only be its value.
 */
export function normalizeBooleanFlags(args: readonly string[]): string[] {
  const command = COMMANDS.find((c) => c === args.find((a) => !a.startsWith('-')));
  if (command === undefined) return [...args];
  const out: string[] = [];
  const rest = [...args];
  for (let arg = rest.shift(); arg !== undefined; arg = rest.shift()) {
    const m = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    const name = m?.[1];
    if (m === null || name === undefined || !isBooleanFlag(command, kebab(name))) {
      out.push(arg);
      continue;
    }
    const flag = kebab(name);
    let text = m[2];
    if (text === undefined) {
      const next = rest[0];
      if (next === undefined || parseBoolean(next) === undefined) {
        out.push(arg);
        continue;
      }
      text = next;
      rest.shift();
    }
    const value = parseBoolean(text);
    if (value === undefined)
      throw new FlagValueError(`--${flag}: ${show(text)} is not a boolean (${BOOLEAN_SPELLINGS})`);
    out.push(`--${name}=${value}`);
  }
  return out;
}

/**
 * The values of `command`'s flags given by OVN_GWMODE_* variables. A variable that
 * names no settings flag at all is a typo, and is reported by its own name: the flag
 * yargs would make of it (`modefile`) is not what the operator wrote. A boolean's value
 * is given as `true` or `false` (parseBoolean), or refused naming the variable.
 */
export function envValues(command: Command, env: NodeJS.ProcessEnv): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [variable, value] of Object.entries(env)) {
    if (!variable.startsWith(ENV_PREFIX) || value === undefined) continue;
    const flag = flagOf(variable);
    // Own keys only: `in` would take OVN_GWMODE_CONSTRUCTOR for a setting (Object.prototype's).
    if (!Object.hasOwn(SETTINGS, flag)) {
      const squash = (f: string) => f.replaceAll('-', '');
      const near = Object.keys(SETTINGS).find((f) => squash(f) === squash(flag));
      throw new EnvError(
        `${variable}: no such setting${near ? `; did you mean ${variableOf(near)}?` : ''} (the variables are ${ENV_PREFIX}<RUN_FLAG_IN_UPPER_SNAKE_CASE>)`,
      );
    }
    if (!Object.hasOwn(COMMAND_OPTIONS[command], flag)) continue;
    if (isBooleanFlag(command, flag)) {
      const b = parseBoolean(value);
      if (b === undefined) throw new EnvError(`${variable}: ${show(value)} is not a boolean (${BOOLEAN_SPELLINGS})`);
      values[flag] = String(b);
    } else {
      values[flag] = value;
    }
  }
  return values;
}

/** A usage error: one line, exit 2 (src/cli/exit-codes.ts). */
export function usageError(message: string): never {
  throw new UsageError(message);
}

/** Declares `command`'s flags, with the values its variables give as the next layer below the command line. */
export function withOptions<T>(y: Argv<T>, command: Command, env: Record<string, string>): Argv<T> {
  return y.options(COMMAND_OPTIONS[command]).config(env) as unknown as Argv<T>;
}
