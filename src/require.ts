// The agent's CommonJS packages (pino, ipaddr.js, ini, netlink's codec, gRPC; yaml and
// prom-client in their own modules) are loaded with require(), never with import.
//
// An import of a CommonJS module makes Node load its CommonJS export lexer
// (cjs-module-lexer) and run it over the module's source to find the names to export;
// require() hands back the same module.exports without it. Measured on Node 20 with the
// shipped flags, importing the four the daemon needs to start cost it about 2.3 MB of
// resident memory for as long as it runs (BENCHMARKS.md, "Idle RSS"), a good part of its
// 60 MB budget. test/cli/loading.test.ts fails if the daemon loads the lexer.
import { createRequire } from 'node:module';

export const requirePackage = createRequire(import.meta.url);
