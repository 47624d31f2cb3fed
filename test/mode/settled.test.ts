// When a read of the mode file is taken (src/mode/settled.ts): the rule alone.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { nextFirstSeen, QUIET_MS, verdictOf, type ReadFacts } from '../../src/mode/settled.js';

const NOW = 1_000_000;
const plain = (mtimeMs: number, key = 'k1'): ReadFacts => ({
  atomic: false,
  stamp: { key, mtimeMs },
  changedDuringRead: false,
});

test('a ConfigMap volume read after its swap is taken at once, however new its file', () => {
  assert.deepEqual(
    verdictOf({ atomic: true, stamp: { key: 'k', mtimeMs: NOW }, changedDuringRead: false }, null, NOW),
    { take: true },
  );
});

test('a file that changed while it was read is never taken, ConfigMap volume or not', () => {
  for (const atomic of [true, false]) {
    const v = verdictOf(
      { atomic, stamp: { key: 'k', mtimeMs: NOW - 10 * QUIET_MS }, changedDuringRead: true },
      null,
      NOW,
    );
    assert.equal(v.take, false);
  }
});

test('a plain file written a moment ago is not yet taken, and is looked at again when it may have settled', () => {
  const v = verdictOf(plain(NOW - 50), null, NOW);
  assert.equal(v.take, false);
  assert.ok(!v.take && v.retryInMs === QUIET_MS - 50);
});

test('a plain file left alone for the quiet time is taken', () => {
  assert.deepEqual(verdictOf(plain(NOW - QUIET_MS), null, NOW), { take: true });
});

test('a plain file whose mtime is in the future is taken once found unchanged the quiet time apart, not before', () => {
  const facts = plain(NOW + 60_000);
  let seen = nextFirstSeen(null, facts.stamp, NOW);
  assert.equal(verdictOf(facts, seen, NOW).take, false);
  seen = nextFirstSeen(seen, facts.stamp, NOW + QUIET_MS);
  assert.deepEqual(verdictOf(facts, seen, NOW + QUIET_MS), { take: true });
  // Changed meanwhile: the count starts again.
  const changed = plain(NOW + 60_000, 'k2');
  seen = nextFirstSeen(seen, changed.stamp, NOW + QUIET_MS);
  assert.equal(verdictOf(changed, seen, NOW + QUIET_MS).take, false);
});

test('a read that failed before the file could be looked at (gone, not a regular file) is taken as it is', () => {
  assert.deepEqual(verdictOf({ atomic: false, stamp: null, changedDuringRead: false }, null, NOW), { take: true });
});

test('a plain file whose mtime is in the future, the wall clock stepped back a month between two reads: taken once found unchanged the quiet time apart on the monotonic clock', () => {
  const MONO = 42_000;
  const facts = plain(NOW + 60_000);
  let seen = nextFirstSeen(null, facts.stamp, MONO);
  assert.equal(verdictOf(facts, seen, NOW, QUIET_MS, MONO).take, false);
  seen = nextFirstSeen(seen, facts.stamp, MONO + QUIET_MS);
  assert.deepEqual(verdictOf(facts, seen, NOW - 30 * 86_400_000, QUIET_MS, MONO + QUIET_MS), { take: true });
});
