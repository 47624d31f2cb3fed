// No test may change the checkout it tests. `npm test` records the built tree (dist/ and
// native/build: every file's path, inode, size and mtime) once tsc is done, before the test
// files run, and checks it after, whether they passed or not (package.json). The files run two at a time,
// so a test that rebuilds the addon (node-gyp deletes native/build first) or rewrites
// dist/ breaks whichever file runs beside it: one test in hundreds, a different one each
// run. This is not a test file (no .test.): it brackets them all.
//   node dist/test/tree-guard.js record|check
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TREES = ['dist', 'native/build'];
/** Kept in dist/, and left out of what it records. */
const RECORD = path.join(ROOT, 'dist/.tree-guard.json');

function fingerprint(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const tree of TREES) {
    const at = path.join(ROOT, tree);
    for (const f of readdirSync(at, { recursive: true, encoding: 'utf8' })) {
      const file = path.join(at, f);
      if (file === RECORD) continue;
      const s = statSync(file, { bigint: true, throwIfNoEntry: false });
      if (s && !s.isDirectory()) out[path.join(tree, f)] = `ino ${s.ino} size ${s.size} mtime ${s.mtimeNs}`;
    }
  }
  return out;
}

const what = process.argv[2];
if (what === 'record') {
  writeFileSync(RECORD, JSON.stringify(fingerprint()));
} else if (what === 'check') {
  const before = JSON.parse(readFileSync(RECORD, 'utf8')) as Record<string, string>;
  const after = fingerprint();
  const changed = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((f) => before[f] !== after[f])
    .sort()
    .map((f) => `  ${f}: ${before[f] ?? 'absent'} -> ${after[f] ?? 'absent'}`);
  if (changed.length > 0) {
    process.stderr.write(
      `tree-guard: the suite changed the checkout it tested (${changed.length} files); find the test that builds in it:\n${changed.slice(0, 20).join('\n')}\n`,
    );
    process.exitCode = 1;
  }
} else {
  process.stderr.write('usage: node dist/test/tree-guard.js record|check\n');
  process.exitCode = 2;
}
