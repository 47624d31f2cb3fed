#!/usr/bin/env node
// ovn-gwmode-agent run | status | health | plan | apply | rollback | events
import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import type { RawRunOptions } from '../config/settings.js';
import { VERSION } from '../version.js';
import { applyCommand, eventsCommand, healthCommand, planCommand, rollbackCommand, runCommand, statusCommand, watchCommand, type PlanOptions, type RollbackOptions } from './commands.js';
import { COMMANDS, EnvError, envValues, withOptions, type Command } from './options.js';

const args = hideBin(process.argv);
const NAMED = `name a command: ${COMMANDS.slice(0, -1).join(', ')} or ${COMMANDS.at(-1)}`;

function usageError(message: string): never {
  process.stderr.write(`ovn-gwmode-agent: ${message}; see --help\n`);
  process.exit(2);
}

/** The command's flags, with its OVN_GWMODE_* variables under them; a misspelt variable is a usage error. */
const options = (command: Command) => (y: Argv) => {
  try {
    return withOptions(y, command, envValues(command, process.env));
  } catch (err) {
    if (err instanceof EnvError) usageError(err.message);
    throw err;
  }
};

/**
 * yargs' complaint, made one line that names what was wrong. Its "Unknown arguments"
 * lists a flag under both spellings (bogus-flag, bogusFlag) and does not tell a flag
 * from a stray word, so the words are looked up in what was typed.
 */
function explain(message: string): string {
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

await yargs(args)
  .scriptName('ovn-gwmode-agent')
  .command('run', 'run the agent: watch the mode file and the kernel, keep the service routes right', options('run'), (argv) =>
    runCommand(argv as unknown as RawRunOptions),
  )
  .command('status', 'ask a running agent how the node is (exit 0 converged, 1 not, 2 unreachable)', (y) => options('status')(y).conflicts('json', 'brief').conflicts('watch', 'json'), (argv) =>
    argv.watch === true ? watchCommand({ socket: argv.socket as string }) : statusCommand({ socket: argv.socket as string, json: argv.json === true, brief: argv.brief === true }),
  )
  .command('health', 'the liveness (or, with --ready, readiness) probe: exit 0 yes, 1 no, 2 unreachable', options('health'), (argv) =>
    healthCommand({ socket: argv.socket as string, ready: argv.ready === true }),
  )
  .command('plan', 'observe once and print what the agent would do (exit 0 when nothing is to do)', options('plan'), (argv) =>
    planCommand(argv as unknown as PlanOptions),
  )
  .command('apply', 'observe once, carry the plan out and verify (exit 0 when nothing is left to do)', options('apply'), (argv) =>
    applyCommand(argv as unknown as PlanOptions & { stateDir: string }),
  )
  .command('rollback', "print how the journal's last migration would be put back; with --yes, put it back (exit 0 done, 1 refused)", options('rollback'), (argv) =>
    rollbackCommand(argv as unknown as RollbackOptions),
  )
  .command('events', "what the agent did on this node, oldest first (its last 256 events)", options('events'), (argv) =>
    eventsCommand({ socket: argv.socket as string, json: argv.json === true, since: argv.since as string | undefined }),
  )
  .demandCommand(1, NAMED)
  .strict()
  .version(VERSION)
  .help()
  .fail((msg, err) => {
    if (err) throw err;
    usageError(explain(msg));
  })
  .parseAsync();
