// Soak, long form (root): FLIPS (default 100,000) mode flips written as ConfigMap volume
// swaps and outside route flaps (one per FLAP_EVERY=20 flips), accelerated, the socket
// polled throughout; see test/helpers/soak.ts. Prints first the number of mode changes
// the agent took in (the flips written are only the input), then the run's length and rate, RSS and open fds after the
// warm-up (the first 10% of the flips) and at the end, the event-loop delay p99 of each
// second of the flips (measured inside the agent by its wrapper, test/fixtures/agent-measured.ts:
// the agent exports no event-loop metric), and the end state. Fails unless
// converged, no unhandled rejection, every request answered, RSS growth under 5 MB,
// fds flat, active handles and resources (timers included) no more at rest at the end
// than at rest before the flips, and the event-loop p99 under 20 ms; a figure that was never measured (no
// event-loop sample, no mode-change counter) fails the run. `npm run bench:soak`.
import { seedFrom } from '../test/helpers/prng.js';
import { SOAK_LOCAL, soak } from '../test/helpers/soak.js';

const seed = seedFrom('GWMODE_SOAK_SEED', 9);
const flips = Number(process.env.FLIPS ?? 100_000);
const r = await soak({
  seed,
  flips,
  flapEvery: Number(process.env.FLAP_EVERY ?? 20),
  flipsPerTurn: Number(process.env.FLIPS_PER_TURN ?? 10),
  sampleEveryMs: 10_000,
  log: (l) => console.log(l),
});
// Every second of the flips, as the agent's wrapper reported it (test/fixtures/agent-measured.ts).
const lags = r.lagSeriesMs;
// Math.max() of no samples is -Infinity, which would pass the bound: no sample fails.
const lagMax = lags.length > 0 ? Math.max(...lags) : null;
const growthKb = r.end.rssKb - r.warm.rssKb;
console.log(
  `seed ${seed}: the agent took in ${r.modeChanges} desired-mode changes (${(r.modeChanges / r.seconds).toFixed(0)}/s) and carried out ${r.replaces} route replaces; a status with repairs suspended seen ${r.suspensionsSeen} times`,
);
console.log(
  `input: ${r.flips} flips written and ${r.flaps} flaps in ${r.seconds.toFixed(1)} s (${(r.flips / r.seconds).toFixed(0)} flips/s); ${r.requests} requests, ${r.failedRequests} failed`,
);
console.log(
  `RSS ${r.warm.rssKb} kB after warm-up, ${r.end.rssKb} kB at the end (growth ${growthKb} kB); max ${Math.max(...r.samples.map((s) => s.rssKb))} kB`,
);
console.log(
  `open fds ${r.warm.fds} after warm-up, ${r.end.fds} at the end, max ${Math.max(...r.samples.map((s) => s.fds))}`,
);
const most = (f: (s: (typeof r.samples)[number]) => number | null) => Math.max(...r.samples.map((s) => f(s) ?? -1));
console.log(
  `active handles ${r.start.handles} at rest before the flips, ${r.end.handles} at rest at the end, max ${most((s) => s.handles)} in the run; ` +
    `active resources (timers included) ${r.start.resources} ${JSON.stringify(r.start.resourceTypes)} before, ${r.end.resources} ${JSON.stringify(r.end.resourceTypes)} at the end, max ${most((s) => s.resources)}`,
);
const handlesFlat =
  r.start.handles !== null &&
  r.end.handles !== null &&
  r.end.handles <= r.start.handles &&
  r.start.resources !== null &&
  r.end.resources !== null &&
  r.end.resources <= r.start.resources;
console.log(
  `event-loop delay p99 (per second): max ${lagMax === null ? 'none (no sample: FAILED)' : lagMax.toFixed(1)} ms over ${lags.length} samples; median of samples ${[...lags].sort((a, b) => a - b)[Math.floor(lags.length / 2)]?.toFixed(1)} ms`,
);
const idles = r.samples.map((s) => s.idleP99Ms).filter((l): l is number => l !== null);
console.log(
  `the same measure in an idle node process beside it (the machine's share): max ${idles.length > 0 ? Math.max(...idles).toFixed(1) : 'none'} ms, median ${[...idles].sort((a, b) => a - b)[Math.floor(idles.length / 2)]?.toFixed(1)} ms`,
);
console.log(
  `end: alive ${r.alive}, fatal logged ${r.fatalLogged}, phase ${r.finalPhase}, route ${r.convergedRoute.join(' | ')}`,
);
const ok =
  r.alive &&
  !r.fatalLogged &&
  r.failedRequests === 0 &&
  r.finalPhase === 'Converged' &&
  r.convergedRoute[0] === SOAK_LOCAL &&
  growthKb < 5 * 1024 &&
  r.end.fds <= r.warm.fds &&
  handlesFlat &&
  lagMax !== null &&
  lagMax < 20 &&
  r.modeChanges > 2;
if (!ok) {
  console.log('FAILED');
  process.exitCode = 1;
}
