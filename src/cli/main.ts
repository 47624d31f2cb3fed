#!/usr/bin/env node
// ovn-gwmode-agent run | status | plan | apply
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import type { RawRunOptions } from '../config/settings.js';
import { VERSION } from '../version.js';
import { healthCommand, onceCommand, runCommand, statusCommand } from './commands.js';
import { agentOptions, DEFAULT_SOCKET } from './options.js';

await yargs(hideBin(process.argv))
  .scriptName('ovn-gwmode-agent')
  .env('OVN_GWMODE')
  .command('run', 'run the agent: watch the mode file and the kernel, keep the service routes right', agentOptions, (argv) =>
    runCommand(argv as unknown as RawRunOptions),
  )
  .command(
    'status',
    "ask a running agent how the node is (exit 0 converged, 1 not, 2 unreachable)",
    (y) =>
      y
        .option('socket', { type: 'string', default: DEFAULT_SOCKET })
        .option('json', { type: 'boolean', describe: 'the raw JSON' })
        .option('brief', { type: 'boolean', describe: 'one line' })
        .conflicts('json', 'brief'),
    (argv) => statusCommand({ socket: argv.socket, json: argv.json ?? false, brief: argv.brief ?? false }),
  )
  .command(
    'health',
    "the liveness (or, with --ready, readiness) probe: exit 0 yes, 1 no, 2 unreachable",
    (y) => y.option('socket', { type: 'string', default: DEFAULT_SOCKET }).option('ready', { type: 'boolean', describe: 'ask /readyz instead of /healthz' }),
    (argv) => healthCommand({ socket: argv.socket, ready: argv.ready ?? false }),
  )
  .command(
    'plan',
    'observe once and print what the agent would do (exit 0 when nothing is to do)',
    (y) => agentOptions(y).option('json', { type: 'boolean', default: false }),
    (argv) => onceCommand(argv as unknown as RawRunOptions & { json: boolean }, false),
  )
  .command(
    'apply',
    'observe once, carry the plan out and verify (exit 0 when nothing is left to do)',
    (y) => agentOptions(y).option('json', { type: 'boolean', default: false }),
    (argv) => onceCommand(argv as unknown as RawRunOptions & { json: boolean }, true),
  )
  .demandCommand(1, 'name a command: run, status, plan or apply')
  .strict()
  .version(VERSION)
  .help()
  .fail((msg, err, y) => {
    if (err) throw err;
    process.stderr.write(`ovn-gwmode-agent: ${msg}\n\n${y.help()}\n`);
    process.exit(2);
  })
  .parseAsync();
