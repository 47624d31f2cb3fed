#!/usr/bin/env node
// ovn-gwmode-agent run | status | health | plan | apply | rollback | events
//
// The entry point hands the command line to options.ts, writes the command's result and
// exits with its code: the one place the process is ended.
import { commandLine } from './options.js';

const result = await commandLine(process.argv.slice(2));
if (result.stdout) process.stdout.write(result.stdout);
if (result.stderr) process.stderr.write(result.stderr);
// Exits, not just sets the code: an abandoned command's work, or the daemon's timers, would keep it alive.
process.exit(result.code);
