#!/usr/bin/env node
// ovn-gwmode-agent run | status | health | plan | apply | rollback | events
//
// The entry point only turns Node's compile cache on, where there is one, and hands the
// command line to dispatch.ts, which decides what each command loads. It imports no
// package: static imports are all loaded before the first line runs, and the cache sees
// only what is loaded after it is on.
import { enableCompileCache } from './compile-cache.js';
import { DEFAULT_STATE_DIR } from './options.js';

enableCompileCache(DEFAULT_STATE_DIR);
const { dispatch } = await import('./dispatch.js');
await dispatch(process.argv.slice(2));
