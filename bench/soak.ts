// Soak, long form (root): FLIPS (default 100,000) mode-file flips and outside route
// flaps (one per FLAP_EVERY=20 flips), accelerated, the socket polled throughout; see
// test/helpers/soak.ts. Prints the run's length and rate, RSS and open fds after the
// warm-up (the first 10% of the flips) and at the end, the event-loop delay p99 (the
// agent's prom-client gauge, scraped every second), and the end state. Fails unless
// converged, no unhandled rejection, every request answered, RSS growth under 5 MB,
// fds flat and the event-loop p99 under 20 ms. `npm run bench:soak`.
import { seedFrom } from '../test/helpers/prng.js';
import { SOAK_LOCAL, soak } from '../test/helpers/soak.js';

const seed = seedFrom('GWMODE_SOAK_SEED', 9);
const flips = Number(process.env.FLIPS ?? 100_000);
const r = await soak({ seed, flips, flapEvery: Number(process.env.FLAP_EVERY ?? 20), flipsPerTurn: Number(process.env.FLIPS_PER_TURN ?? 10), sampleEveryMs: 10_000, log: (l) => console.log(l) });
const lags = r.samples.map((s) => s.lagP99Ms).filter((l): l is number => l !== null);
const lagMax = Math.max(...lags);
const growthKb = r.end.rssKb - r.warm.rssKb;
console.log(`seed ${seed}: ${r.flips} flips and ${r.flaps} flaps in ${r.seconds.toFixed(1)} s (${(r.flips / r.seconds).toFixed(0)} flips/s); ${r.requests} requests, ${r.failedRequests} failed`);
console.log(`the agent took in ${r.modeChanges} desired-mode changes and carried out ${r.replaces} route replaces; a status with repairs suspended seen ${r.suspensionsSeen} times`);
console.log(`RSS ${r.warm.rssKb} kB after warm-up, ${r.end.rssKb} kB at the end (growth ${growthKb} kB); max ${Math.max(...r.samples.map((s) => s.rssKb))} kB`);
console.log(`open fds ${r.warm.fds} after warm-up, ${r.end.fds} at the end, max ${Math.max(...r.samples.map((s) => s.fds))}`);
console.log(`event-loop delay p99 (per second): max ${lagMax.toFixed(1)} ms over ${lags.length} samples; median of samples ${[...lags].sort((a, b) => a - b)[Math.floor(lags.length / 2)]?.toFixed(1)} ms`);
const idles = r.samples.map((s) => s.idleP99Ms).filter((l): l is number => l !== null);
console.log(`the same measure in an idle node process beside it (the machine's share): max ${Math.max(...idles).toFixed(1)} ms, median ${[...idles].sort((a, b) => a - b)[Math.floor(idles.length / 2)]?.toFixed(1)} ms`);
console.log(`end: alive ${r.alive}, fatal logged ${r.fatalLogged}, phase ${r.finalPhase}, route ${r.convergedRoute.join(' | ')}`);
const ok = r.alive && !r.fatalLogged && r.failedRequests === 0 && r.finalPhase === 'Converged' && r.convergedRoute[0] === SOAK_LOCAL && growthKb < 5 * 1024 && r.end.fds <= r.warm.fds && lagMax < 20;
if (!ok) {
  console.log('FAILED');
  process.exitCode = 1;
}
