// Chaos, long form (root, containerd): MIGRATIONS (default 40) migrations local ->
// shared -> local ..., KILLS_PER_MIGRATION (default 8) SIGKILLs each at seeded random
// points (GWMODE_CHAOS_SEED), under a real containerd. Prints where the kills landed
// and fails unless every migration to local restarted ovnkube-node exactly once and none
// to shared did (shared is ovnkube-node's; one entry per migration, none after the last),
// the route is right, the journal's last record owes nothing, and kills landed at each
// stage (not journaled, restart owed, requested, done).
// `npm run bench:chaos`.
import { chaos } from '../test/helpers/chaos.js';
import { seedFrom } from '../test/helpers/prng.js';

const seed = seedFrom('GWMODE_CHAOS_SEED', 20261202);
const migrations = Number(process.env.MIGRATIONS ?? 40);
const killsPerMigration = Number(process.env.KILLS_PER_MIGRATION ?? 8);
const r = await chaos({ seed, migrations, killsPerMigration, log: (l) => console.log(l) });
// One entry per migration, 1 for those to local (odd ones: the run starts shared), 0 for
// those to shared: a stop after the last migration makes one entry more.
const once =
  r.stopsPerMigration.length === migrations && r.stopsPerMigration.every((n, i) => n === (i % 2 === 0 ? 1 : 0));
const stages = ['not journaled', 'restart owed', 'restart requested', 'restart done'];
const missed = stages.filter((s) => (r.killedAt[s] ?? 0) === 0);
console.log(`seed ${seed}: ${r.kills} SIGKILLs across ${migrations} migrations in ${r.seconds.toFixed(1)} s`);
console.log(
  `kills by where they landed: ${JSON.stringify(r.killedAt)}${missed.length ? `; no kill landed at: ${missed.join(', ')}` : ''}`,
);
console.log(
  `restarts by the agent per migration: ${once ? `exactly 1 for each to local, none to shared` : JSON.stringify(r.stopsPerMigration)}`,
);
console.log(
  `route at the end: ${r.finalRoutes.join(' | ')} (expected ${r.expectedRoute}); journal ${JSON.stringify(r.journal)}; phase ${r.finalPhase}`,
);
const ok =
  once &&
  r.finalRoutes.length === 1 &&
  r.finalRoutes[0] === r.expectedRoute &&
  (r.journal.mode === 'shared' ? r.journal.restart === 'none' : r.journal.restart === 'done') &&
  !r.journal.tmpLeft &&
  r.finalPhase === 'Converged' &&
  missed.length === 0;
if (!ok) {
  console.log('FAILED');
  process.exitCode = 1;
}
