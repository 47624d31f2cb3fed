// A copy of the checkout (without .git, node_modules, dist/ or native/build; node_modules is
// linked) whose dist/ is stale: its main.js only says so and exits 97, and it holds the output of
// a source since removed. A package built from it shows that the build compiles src/ itself
// (packaging/deb/build-deb.sh, packaging/container/build-image.sh) and never ships a checkout's dist/.
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** dist/'s output of a source since removed, relative to the copy. */
export const LEFTOVER = 'dist/src/removed-source.js';

export function staleCheckout(root: string, into: string): string {
  const left = new Set(['.git', 'node_modules', 'dist', 'native/build'].map((p) => path.join(root, p)));
  cpSync(root, into, { recursive: true, filter: (src) => !left.has(src) });
  symlinkSync(path.join(root, 'node_modules'), path.join(into, 'node_modules'));
  mkdirSync(path.join(into, 'dist/src/cli'), { recursive: true });
  writeFileSync(
    path.join(into, 'dist/src/cli/main.js'),
    "#!/usr/bin/env node\nconsole.error('a stale build');\nprocess.exit(97);\n",
  );
  writeFileSync(path.join(into, LEFTOVER), '');
  return into;
}
