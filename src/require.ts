// What the agent loads with require(), never with import, for what an import would cost
// a daemon meant to stay small at rest (docs/benchmarks.md, "### 7. Idle RSS, fourth round";
// measured with the shipped flags):
//  - its CommonJS packages (pino, ipaddr.js, netlink's codec, gRPC; yaml and
//    prom-client in their own modules): an import of a CommonJS module makes Node 20 load
//    its CommonJS export lexer (cjs-module-lexer) and run it over the module's source to
//    find the names to export. The four the daemon needed to start (ini, since dropped,
//    among them) cost it about 2 MB
//    (1.5 to 2.4 MB in four interleaved runs).
//  - node:http: an import builds a namespace of all the builtin's exports, reading each,
//    and on Node 24 (the image's and the Debian package's runtime) three of them
//    (WebSocket, CloseEvent, MessageEvent) are getters that load Node's bundled undici:
//    about 4 MB of anonymous memory and 6.6 MB of RSS in all.
//  - on the path of the probe commands (status, health), node:util, node:fs, node:path
//    and node:net: on Node 24 an import of node:util loads Node's worker modules and one
//    of node:fs its REPL history, about 2 MB of the 50 MB a probe may take (issue 12).
// require() hands back the same module.exports without any of that. Guarded twice:
// test/architecture.test.ts fails on any import (not type-only) of node:http or of a
// package that is not "type": "module" anywhere in src/, on every Node version;
// test/cli/loading.test.ts fails if a started daemon reaches a CommonJS module by import,
// or (on Node 24, where the getters are) loads undici, or a probe command Node's worker
// or REPL modules.
// Package and builtin names only: a relative specifier would resolve from this file.
import { createRequire } from 'node:module';

export const requireModule = createRequire(import.meta.url);
