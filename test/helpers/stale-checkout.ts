// A copy of the checkout (its files as git lists them: tracked and untracked, not ignored; so no
// .git, node_modules, dist/ or native/build; node_modules is linked) whose dist/ is stale: its
// main.js only says so and exits 97, and it holds the output of a source since removed. A package
// built from it shows that the build compiles src/ afresh (npm pack's prepack,
// packaging/deb/build-deb.sh, packaging/container/build-image.sh) and never ships a stale dist/.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** dist/'s output of a source since removed, relative to the copy. */
export const LEFTOVER = 'dist/src/removed-source.js';

export function staleCheckout(root: string, into: string): string {
  const listed = spawnSync('git', ['-C', root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    encoding: 'utf8',
    maxBuffer: 16 << 20,
  });
  if (listed.status !== 0) throw new Error(`git ls-files in ${root}: ${listed.stderr}`);
  for (const file of listed.stdout.split('\0').filter(Boolean)) {
    mkdirSync(path.dirname(path.join(into, file)), { recursive: true });
    // A file deleted but not yet staged is still listed: what the working tree lacks, the copy lacks.
    try {
      copyFileSync(path.join(root, file), path.join(into, file));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  symlinkSync(path.join(root, 'node_modules'), path.join(into, 'node_modules'));
  mkdirSync(path.join(into, 'dist/src/cli'), { recursive: true });
  writeFileSync(
    path.join(into, 'dist/src/cli/main.js'),
    "#!/usr/bin/env node\nconsole.error('a stale build');\nprocess.exit(97);\n",
  );
  writeFileSync(path.join(into, LEFTOVER), '');
  return into;
}

/** The lines of a packaging script's log that carry its `[tag` prefix, echoed to stderr (the test's progress). */
export function echoTagged(log: string, tag: string): void {
  process.stderr.write(
    log
      .split('\n')
      .filter((l) => l.startsWith(`[${tag}`))
      .map((l) => `${l}\n`)
      .join(''),
  );
}
