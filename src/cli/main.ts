#!/usr/bin/env node
// ovn-gwmode-agent's entry: the command line to options.ts, the command's result written, and
// its exit code: the one place the process is ended.
import { commandLine } from './options.js';

const result = await commandLine(process.argv.slice(2));
if (result.stdout) process.stdout.write(result.stdout);
if (result.stderr) process.stderr.write(result.stderr);
// Exits, not just sets the code: an abandoned command's work, or the daemon's timers, would keep it alive.
process.exit(result.code);
