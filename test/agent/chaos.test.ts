// The chaos run's short seeded form (test/helpers/chaos.ts; the long one is
// `npm run bench:chaos`): at least 16 SIGKILLs at seeded random points of four
// migrations under a real containerd. At the end the route is right, ovnkube-node
// was restarted by the agent exactly once per migration to local and never for one to
// shared (ovnkube-node's own restart by the rollout makes shared), and the journal's last
// record is shared, owing nothing, with no temporary file left. Kills landed before the journal, with
// the restart requested, and after the migration was done. A kill in the short window
// between the journal and the restart request (replaces under way) depends on timing:
// the diagnostic counts it, the long form (bench/chaos.ts) requires it, and
// test/agent/sigterm.test.ts and the loop tests cover that window deterministically.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { chaos } from '../helpers/chaos.js';
import { containerdSkipReason } from '../helpers/containerd.js';
import { skipWithoutKernel } from '../helpers/netns.js';
import { seedFrom } from '../helpers/prng.js';

const seed = seedFrom('GWMODE_CHAOS_SEED', 20261202);

test(`chaos (seed ${seed}): 16 SIGKILLs across 4 migrations, each migration to local restarting ovnkube-node exactly once, none to shared`, async (t) => {
  if (skipWithoutKernel(t)) return;
  if (containerdSkipReason) {
    process.stderr.write(`SKIPPED (${containerdSkipReason}): ${t.name}\n`);
    return t.skip(containerdSkipReason);
  }
  const r = await chaos({ seed, migrations: 4, killsPerMigration: 4, log: (l) => t.diagnostic(l) });
  t.diagnostic(`kills by where they landed: ${JSON.stringify(r.killedAt)}; ${r.seconds.toFixed(1)} s`);
  assert.ok(r.kills >= 16);
  assert.deepEqual(r.finalRoutes, [r.expectedRoute]);
  assert.deepEqual(r.stopsPerMigration, [1, 0, 1, 0], `seed ${seed}`);
  assert.deepEqual(r.journal, { mode: 'shared', restart: 'none', tmpLeft: false });
  assert.equal(r.finalPhase, 'Converged');
  for (const stage of ['not journaled', 'restart requested', 'restart done']) {
    assert.ok((r.killedAt[stage] ?? 0) > 0, `a kill landed at "${stage}": ${JSON.stringify(r.killedAt)}`);
  }
});
