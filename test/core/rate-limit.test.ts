// The restart rate limit: pure, with times passed in.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { HOUR_MS, restartAllowed } from '../../src/core/decide.js';

const limit = { minIntervalMs: 5 * 60_000, maxPerHour: 3 };
const T = 10 * HOUR_MS;
const min = 60_000;

test('restart rate limit: one per interval, three an hour', () => {
  assert.deepEqual(restartAllowed([], T, limit), { allowed: true });
  assert.deepEqual(restartAllowed([T - 6 * min], T, limit), { allowed: true });
  const tooSoon = restartAllowed([T - 2 * min], T, limit);
  assert.equal(tooSoon.allowed, false);
  assert.equal(!tooSoon.allowed && tooSoon.nextAllowedAt, T + 3 * min);
  const fourth = restartAllowed([T - 50 * min, T - 30 * min, T - 10 * min], T, limit);
  assert.equal(fourth.allowed, false);
  assert.equal(!fourth.allowed && fourth.nextAllowedAt, T + 10 * min);
  assert.match(!fourth.allowed ? fourth.reason : '', /3 restarts in the last hour/);
  assert.deepEqual(restartAllowed([T - 70 * min, T - 30 * min, T - 10 * min], T, limit), { allowed: true });
});
