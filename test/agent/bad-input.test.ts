// The real agent fed a seeded sample of generated bad mode files (GWMODE_MODE_SEED):
// each one read (the status shows the very error a read of it gives), no route
// changed, the last valid mode kept, the agent up.
import { strict as assert } from 'node:assert';
import { renameSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { readModeSource } from '../../src/mode/source.js';
import { waitForStatus, withAgent } from '../helpers/agent.js';
import { modeCase } from '../helpers/mode-fuzz.js';
import { skipWithoutKernel } from '../helpers/netns.js';
import { prng, seedFrom } from '../helpers/prng.js';

test('40 generated bad mode files on a converged agent: each error in the status, no route change, the mode kept', async (t) => {
  if (skipWithoutKernel(t)) return;
  const seed = seedFrom('GWMODE_MODE_SEED', 9) + 1;
  const rng = prng(seed);
  await withAgent({ mode: 'local' }, async ({ ns, scratch, agent }) => {
    await waitForStatus(agent, (s) => s.routes.every((r) => r.inSync), 'the local route');
    const before = ns.routes('10.96.0.0/16');
    assert.deepEqual(before, ['10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0']);
    let sent = 0;
    while (sent < 40) {
      const c = modeCase(rng);
      if (c.expect !== 'error') continue;
      sent++;
      // Written beside and renamed, as kubectl cp and editors do: the agent never sees half a file.
      writeFileSync(`${scratch.modeFile}.tmp`, c.content);
      renameSync(`${scratch.modeFile}.tmp`, scratch.modeFile);
      const expected = (await readModeSource(scratch.modeFile)).error;
      assert.ok(expected !== null, `case ${sent} (${c.kind}, seed ${seed})`);
      const s = await waitForStatus(
        agent,
        (st) => st.modeSource.error === expected,
        `the error of case ${sent} (${c.kind}, seed ${seed}): ${expected}`,
      );
      assert.equal(s.desiredMode, 'local', 'the last valid mode is kept');
      assert.deepEqual(ns.routes('10.96.0.0/16'), before, `case ${sent} (${c.kind}) changed the route`);
    }
    assert.equal(agent.child.exitCode, null);
    assert.equal(agent.logs().filter((l) => l.level === 60).length, 0, 'nothing fatal logged');
  });
});
