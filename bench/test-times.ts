// Compares two test runs test by test: the tests in each, the tests in common, the
// common tests' total time in each run and the 20 biggest differences. Each run is the
// TAP that `node --test --test-reporter=tap` prints, e.g.
//   node --test --test-concurrency=1 --test-reporter=tap $(find dist/test -name '*.test.js' | sort) > after.tap
// Run: `npm run bench:test-times -- BEFORE.tap AFTER.tap` (relative paths are taken from
// where npm was started). TOP sets how many differences are listed (default 20).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { compareTimes, failedTests, testTimes } from './tap-times.js';

const [beforeFile, afterFile] = process.argv.slice(2);
if (!beforeFile || !afterFile) {
  process.stderr.write('usage: npm run bench:test-times -- BEFORE.tap AFTER.tap\n');
  process.exit(2);
}
const from = process.env.INIT_CWD ?? process.cwd();
const top = Number(process.env.TOP ?? 20);
const beforeTap = readFileSync(path.resolve(from, beforeFile), 'utf8');
const afterTap = readFileSync(path.resolve(from, afterFile), 'utf8');
const c = compareTimes(testTimes(beforeTap), testTimes(afterTap), top);

const s = (ms: number) => (ms / 1000).toFixed(2).padStart(7);
const signed = (ms: number) => `${ms >= 0 ? '+' : '-'}${(Math.abs(ms) / 1000).toFixed(2)}`.padStart(7);
const change =
  c.commonBeforeMs > 0
    ? ` (${signed(c.commonAfterMs - c.commonBeforeMs).trim()} s, ${((c.commonAfterMs / c.commonBeforeMs - 1) * 100).toFixed(1)} %)`
    : '';
console.log(`tests: ${c.before} in ${beforeFile}, ${c.after} in ${afterFile}, ${c.common.length} in common`);
for (const [file, tap] of [
  [beforeFile, beforeTap],
  [afterFile, afterTap],
] as const) {
  const failed = failedTests(tap);
  if (failed > 0)
    console.log(
      `${failed} tests failed in ${file}: a test that fails early takes less time, so its total is no yardstick`,
    );
}
console.log(
  `the common tests' total: ${(c.commonBeforeMs / 1000).toFixed(1)} s before, ${(c.commonAfterMs / 1000).toFixed(1)} s after${change}`,
);
console.log(
  `\nthe ${c.biggest.length} biggest differences (seconds):\n${'before'.padStart(7)} ${'after'.padStart(7)} ${'change'.padStart(7)}  test`,
);
for (const t of c.biggest) console.log(`${s(t.beforeMs)} ${s(t.afterMs)} ${signed(t.afterMs - t.beforeMs)}  ${t.name}`);
for (const [label, names] of [
  [`only in ${beforeFile}`, c.onlyBefore],
  [`only in ${afterFile}`, c.onlyAfter],
] as const) {
  if (!names.length) continue;
  const more = names.length > top ? `\n  ... and ${names.length - top} more` : '';
  console.log(
    `\n${label} (${names.length}):\n${names
      .slice(0, top)
      .map((n) => `  ${n}`)
      .join('\n')}${more}`,
  );
}
