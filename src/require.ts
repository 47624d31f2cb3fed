// CommonJS packages are loaded with require(), never import: on Node 20 the first import
// of a CommonJS module sets up Node's export lexer, 5 to 8 MB of RSS the daemon keeps for
// life (measured: docs/benchmarks.md; Node 24 shows no difference). Package names only: a
// relative specifier would resolve from this file. test/architecture.test.ts holds the rule.
import { createRequire } from 'node:module';

export const requireModule = createRequire(import.meta.url);
