// bench/test-times.ts compares two TAP runs by test name: what it reads out of TAP.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { compareTimes, failedTests, testTimes } from '../../bench/tap-times.js';

const RUN = `TAP version 13
# Subtest: converges
ok 1 - converges
  ---
  duration_ms: 598.36
  ...
# Subtest: a suite
    # Subtest: converges
    ok 1 - converges
      ---
      duration_ms: 12
      ...
    # Subtest: inner only
    not ok 2 - inner only
      ---
      duration_ms: 40.5
      failureType: 'testCodeFailure'
      error: 'boom'
      code: 'ERR_TEST_FAILURE'
      ...
    1..2
not ok 2 - a suite
  ---
  duration_ms: 60
  ...
# Subtest: needs root
ok 3 - needs root # SKIP needs root
  ---
  duration_ms: 0.2
  ...
1..3
# tests 4
# duration_ms 700
`;

test('test-times: each test once by name, the top-level time before a subtest of the same name, failures counted, a skip kept apart', () => {
  assert.deepEqual(
    [...testTimes(RUN)],
    [
      ['converges', 598.36],
      ['inner only', 40.5],
      ['a suite', 60],
      ['needs root # SKIP needs root', 0.2],
    ],
  );
});

test('test-times: the common tests, their totals in each run and the biggest changes first', () => {
  const before = new Map([
    ['a', 1000],
    ['b', 500],
    ['gone', 7],
  ]);
  const after = new Map([
    ['b', 2500],
    ['a', 400],
    ['new', 3],
  ]);
  const c = compareTimes(before, after, 1);
  assert.deepEqual(c.common, ['a', 'b']);
  assert.equal(c.commonBeforeMs, 1500);
  assert.equal(c.commonAfterMs, 2900);
  assert.deepEqual(c.biggest, [{ name: 'b', beforeMs: 500, afterMs: 2500 }]);
  assert.deepEqual([c.before, c.after, c.onlyBefore, c.onlyAfter], [3, 3, ['gone'], ['new']]);
});

test('test-times: of two top-level tests with one name the first keeps its time; the failed top-level tests are counted', () => {
  const twice = `TAP version 13
ok 1 - same
  ---
  duration_ms: 5
  ...
not ok 2 - same
  ---
  duration_ms: 900
  ...
`;
  assert.deepEqual([...testTimes(twice)], [['same', 5]]);
  assert.equal(failedTests(twice), 1);
  assert.equal(failedTests(RUN), 1);
});
