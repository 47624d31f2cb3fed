// What the agent loads with require(), never with import, for what an import would cost
// a daemon meant to stay small at rest (BENCHMARKS.md, "Idle RSS"; measured with the
// shipped flags):
//  - its CommonJS packages (pino, ipaddr.js, ini, netlink's codec, gRPC; yaml and
//    prom-client in their own modules): an import of a CommonJS module makes Node 20 load
//    its CommonJS export lexer (cjs-module-lexer) and run it over the module's source to
//    find the names to export. The four the daemon needs to start cost it about 2.3 MB.
//  - node:http: an import builds a namespace of all the builtin's exports, reading each,
//    and on Node 24 (the image's and the Debian package's runtime) three of them
//    (WebSocket, CloseEvent, MessageEvent) are getters that load Node's bundled undici:
//    about 4 MB of anonymous memory and 6.6 MB of RSS in all.
// require() hands back the same module.exports without either. test/cli/loading.test.ts
// fails if the daemon reaches a CommonJS module by import, or loads undici.
import { createRequire } from 'node:module';

export const requireModule = createRequire(import.meta.url);
