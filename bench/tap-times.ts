// Test durations out of TAP as `node --test --test-reporter=tap` prints it, and the
// comparison of two such runs test by test (by name). Pure: bench/test-times.ts reads
// the files and prints.

/**
 * Milliseconds per test name. A test is an `ok N - NAME` or `not ok N - NAME` line whose
 * YAML block (within the next 7 lines) carries `duration_ms`. A top-level test's time wins
 * over a subtest of the same name; a name's first occurrence otherwise. A skipped or todo
 * test keeps its directive (`# SKIP ...`) in its name, so it never matches a test that ran.
 */
export function testTimes(tap: string): Map<string, number> {
  const lines = tap.split('\n');
  const times = new Map<string, number>();
  const topLevel = new Set<string>();
  lines.forEach((line, i) => {
    const m = /^(\s*)(?:not )?ok \d+ - (.*)$/.exec(line);
    if (!m) return;
    const name = m[2]!.trim();
    for (const next of lines.slice(i + 1, i + 8)) {
      const d = /duration_ms: ([\d.]+)/.exec(next);
      if (!d) continue;
      const top = m[1] === '';
      if (top ? !topLevel.has(name) : !times.has(name)) times.set(name, Number(d[1]));
      if (top) topLevel.add(name);
      return;
    }
  });
  return times;
}

/** How many top-level tests failed (`not ok`): a run whose tests failed fast is no yardstick. */
export function failedTests(tap: string): number {
  return tap.split('\n').filter((line) => /^not ok \d+ - /.test(line)).length;
}

export interface Comparison {
  before: number;
  after: number;
  /** Names in both runs, in the order of the first. */
  common: string[];
  /** Total milliseconds of the common tests in each run. */
  commonBeforeMs: number;
  commonAfterMs: number;
  /** The common tests by size of their change (after minus before), largest first. */
  biggest: Array<{ name: string; beforeMs: number; afterMs: number }>;
  onlyBefore: string[];
  onlyAfter: string[];
}

export function compareTimes(before: Map<string, number>, after: Map<string, number>, top = 20): Comparison {
  const common = [...before.keys()].filter((name) => after.has(name));
  const sum = (run: Map<string, number>) => common.reduce((total, name) => total + run.get(name)!, 0);
  const biggest = common
    .map((name) => ({ name, beforeMs: before.get(name)!, afterMs: after.get(name)! }))
    .sort((a, b) => Math.abs(b.afterMs - b.beforeMs) - Math.abs(a.afterMs - a.beforeMs))
    .slice(0, top);
  return {
    before: before.size,
    after: after.size,
    common,
    commonBeforeMs: sum(before),
    commonAfterMs: sum(after),
    biggest,
    onlyBefore: [...before.keys()].filter((name) => !after.has(name)),
    onlyAfter: [...after.keys()].filter((name) => !before.has(name)),
  };
}
