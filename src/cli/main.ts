#!/usr/bin/env node
// ovn-gwmode-agent run | status | health | plan | apply | rollback | events
//
// The entry point hands the command line to yargs.ts, writes the command's result and
// exits with its code: the one place the process is ended (src/cli/exit-codes.ts maps
// errors to codes).
import { commandLine } from './yargs.js';

const result = await commandLine(process.argv.slice(2));
if (result.stdout) process.stdout.write(result.stdout);
if (result.stderr) process.stderr.write(result.stderr);
// Exits, not just sets the code: a command abandoned by a signal leaves its work pending,
// and the daemon's timers and sockets would keep the process alive.
process.exit(result.code);
