// The soak's short seeded form (test/helpers/soak.ts; the long one is `npm run
// bench:soak`, 100,000 flips): 3,000 mode flips written as ConfigMap volume swaps (taken
// at once, as kubelet's are) and outside route flaps with the
// socket polled throughout. It asserts what holds whatever the machine's load: every
// request answered, no unhandled rejection (the agent is up and logged nothing fatal),
// open fds flat, active handles and resources (timers included; prom-client's gauges on
// /metrics) no more at rest after the flips than at rest before, and convergence at the end. Memory and event-loop figures are the
// long run's, in docs/benchmarks.md.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { skipWithoutKernel } from '../helpers/netns.js';
import { seedFrom } from '../helpers/prng.js';
import { SOAK_LOCAL, soak } from '../helpers/soak.js';

const seed = seedFrom('GWMODE_SOAK_SEED', 9);

test(`soak (seed ${seed}): 3,000 mode flips and route flaps, the socket polled: every request answered, fds and handles flat, converged at the end`, async (t) => {
  if (skipWithoutKernel(t)) return;
  const r = await soak({ seed, flips: 3000, flapEvery: 20, flipsPerTurn: 5, sampleEveryMs: 1000 });
  t.diagnostic(
    `${r.modeChanges} mode changes taken in by the agent (of ${r.flips} flips written), ${r.replaces} replaces; ${r.flaps} flaps in ${r.seconds.toFixed(1)} s; ${r.requests} requests; fds ${r.warm.fds} -> ${r.end.fds}; active handles at rest ${r.start.handles} -> ${r.end.handles}, resources ${JSON.stringify(r.start.resourceTypes)} -> ${JSON.stringify(r.end.resourceTypes)}; ${r.failedRequests} failed requests, alive ${r.alive}`,
  );
  if (!r.alive || r.failedRequests > 0 || r.finalPhase !== 'Converged') t.diagnostic(r.outputTail);
  assert.ok(r.alive, 'the agent is up');
  assert.equal(r.fatalLogged, false, 'nothing fatal logged (an unhandled rejection is)');
  assert.equal(r.failedRequests, 0);
  assert.ok(r.modeChanges > 2 && r.replaces > 2, 'the flips reached the agent');
  assert.ok(
    r.end.fds <= r.warm.fds,
    `open fds flat: ${r.warm.fds} after warm-up, ${r.end.fds} at the end: ${r.fdsAtEnd.join(', ')}`,
  );
  // Handles (sockets, pipes, watchers) and resources (timers too) at rest before the flips
  // and at rest after them: in between, watchers and timers come and go with each swap.
  assert.ok(r.start.handles !== null && r.end.handles !== null, 'the active handles were measured');
  assert.ok(
    r.end.handles <= r.start.handles,
    `active handles flat: ${r.start.handles} at rest before, ${r.end.handles} at the end`,
  );
  assert.ok(
    r.start.resources !== null && r.end.resources !== null && r.end.resources <= r.start.resources,
    `active resources (timers included) flat: ${JSON.stringify(r.start.resourceTypes)} at rest before, ${JSON.stringify(r.end.resourceTypes)} at the end`,
  );
  assert.equal(r.finalPhase, 'Converged');
  assert.deepEqual(r.convergedRoute, [SOAK_LOCAL]);
});
