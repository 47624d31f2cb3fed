// The restart rate limit and the fight tracker: pure, with times passed in.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { FightTracker, FIGHT_WINDOW_MS, HOUR_MS, restartAllowed } from '../../src/restart/policy.js';

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

test('fight tracker: the third set-back within ten minutes suspends repairs, naming the shape', () => {
  const f = new FightTracker();
  const br = 'via 172.18.0.1 dev br-ex mtu 1400';
  const mp0 = 'via 10.244.1.1 dev ovn-k8s-mp0';
  assert.equal(f.beforeReplace('10.96.0.0/16', br, T, 'hint'), false);
  f.applied('10.96.0.0/16', mp0, T);
  for (let i = 1; i <= 2; i++) {
    assert.equal(f.beforeReplace('10.96.0.0/16', br, T + i * min, 'hint'), false, `set-back ${i} is repaired`);
    f.applied('10.96.0.0/16', mp0, T + i * min);
  }
  assert.equal(f.beforeReplace('10.96.0.0/16', br, T + 3 * min, 'is it?'), true);
  assert.match(f.suspensions().get('10.96.0.0/16') ?? '', /route set back to via 172\.18\.0\.1 dev br-ex mtu 1400 3 times in 10 min: is it\?/);
  f.reset();
  assert.equal(f.suspensions().size, 0);
});

test('fight tracker: set-backs further apart than the window never suspend', () => {
  const f = new FightTracker();
  for (let i = 0; i < 6; i++) {
    const now = T + i * (FIGHT_WINDOW_MS + 1);
    assert.equal(f.beforeReplace('fd00:10:96::/112', 'via fd00::1 dev br-ex', now, 'h'), false);
    f.applied('fd00:10:96::/112', 'via fd00:10:244:1::1 dev ovn-k8s-mp0', now);
  }
});
