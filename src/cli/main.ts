#!/usr/bin/env node
// ovn-gwmode-agent run | status | health | plan | apply | rollback | events
//
// The entry point only turns Node's compile cache on, where there is one, and hands the
// command line to dispatch.ts, which decides what each command loads. Its imports are
// Node built-ins: static imports are all loaded before the first line runs, and the
// cache sees only what is loaded after it is on.
import { lstatSync } from 'node:fs';
import module from 'node:module';
import path from 'node:path';
import { DEFAULT_STATE_DIR } from './options.js';

/**
 * Node 22.1+ (the container image ships Node 24; Node 20 has no such cache) can keep the
 * code it compiled for our modules, so that the next process skips compiling them. The
 * cache lives in the default state directory, and only when that is the caller's own and
 * writable by nobody else: a root daemon must not load code others could have written
 * (Node's default, the shared temporary directory, would let them).
 */
function enableCompileCache(): void {
  const enable = (module as { enableCompileCache?: (dir: string) => unknown }).enableCompileCache;
  if (enable === undefined) return;
  try {
    const dir = lstatSync(DEFAULT_STATE_DIR);
    if (dir.isDirectory() && dir.uid === process.getuid?.() && (dir.mode & 0o022) === 0) enable(path.join(DEFAULT_STATE_DIR, 'compile-cache'));
  } catch {
    // No state directory (yet): no cache.
  }
}

enableCompileCache();
const { dispatch } = await import('./dispatch.js');
await dispatch(process.argv.slice(2));
