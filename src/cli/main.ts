#!/usr/bin/env node
// ovn-gwmode-agent run | status | health | plan | apply | rollback | events
//
// The entry point only turns Node's compile cache on, where there is one, hands the
// command line to dispatch.ts, which decides what each command loads, and writes the
// command's result and exits with its code: the one place the process is ended
// (src/cli/exit-codes.ts maps errors to codes). It imports no package: static imports
// are all loaded before the first line runs, and the cache sees only what is loaded
// after it is on.
import { enableCompileCache } from './compile-cache.js';
import { DEFAULT_STATE_DIR } from './options.js';

enableCompileCache(DEFAULT_STATE_DIR);
const { commandLine } = await import('./dispatch.js');
const result = await commandLine(process.argv.slice(2));
if (result.stdout) process.stdout.write(result.stdout);
if (result.stderr) process.stderr.write(result.stderr);
// Exits, not just sets the code: a command abandoned by a signal leaves its work pending,
// and the daemon's timers and sockets would keep the process alive.
process.exit(result.code);
