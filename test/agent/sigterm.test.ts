// SIGTERM in the middle of an apply: the agent finishes the pass under way (within
// its stop grace), leaving both families in one mode, or abandons it (a replace held
// past the grace): then one family may be replaced and the other not, nothing put
// back. Either way the journal has the migration on record, exit 0, and the next agent
// completes it with exactly one ovnkube-node restart in all.
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { AgentProcess, FAULTY, FakeOvnkube, Scratch, waitForStatus } from '../helpers/agent.js';
import { seedNode, skipWithoutKernel, type Netns } from '../helpers/netns.js';
import { within } from '../helpers/wait.js';

const ARGS = ['--service-cidr', '10.96.0.0/16,fd00:10:96::/112', '--mtu', '1400', '--restart', 'signal'];

interface Stopped {
  ns: Netns;
  scratch: Scratch;
  ovnkube: FakeOvnkube;
  /** The first agent's JSON log lines. */
  logs: Array<Record<string, unknown>>;
}

/**
 * A dual-stack local-mode migration whose first agent runs with `fault` (the SIGTERM
 * comes in the middle of it); that agent must stop with exit 0, having logged the SIGTERM
 * and a clean stop. `afterStop` checks what it left behind. Then the next agent must
 * complete the migration: both families local, one restart request, ovnkube-node
 * restarted exactly once.
 */
async function interruptedMigration(t: TestContext, fault: string, afterStop: (c: Stopped) => void): Promise<void> {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true, ipv6: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  let second: AgentProcess | undefined;
  try {
    scratch.writeMode('local');
    ovnkube.start('local', { respawn: true });
    const first = new AgentProcess(ns, scratch, ARGS, { GWMODE_FAULT: fault }, FAULTY);
    assert.equal(await within(first.exited, 30_000, 'the agent stops'), 0, first.output.slice(-3000));
    const logs = first.logs();
    assert.ok(
      logs.some((l) => l.msg === 'stopping' && l.signal === 'SIGTERM'),
      'the SIGTERM came during the pass',
    );
    assert.ok(
      logs.some((l) => l.msg === 'stopped'),
      'a clean stop',
    );
    afterStop({ ns, scratch, ovnkube, logs });

    second = new AgentProcess(ns, scratch, ARGS);
    const s = await waitForStatus(second, (s) => s.phase === 'Converged', 'Converged by the next agent');
    assert.match(ns.routes('10.96.0.0/16')[0] ?? '', /ovn-k8s-mp0/);
    assert.match(ns.routes('fd00:10:96::/112')[0] ?? '', /ovn-k8s-mp0/);
    assert.equal(s.restart?.count, 1, 'one restart request for the one migration');
    assert.equal(ovnkube.starts, 2, 'ovnkube-node restarted exactly once');
  } finally {
    await second?.stop();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
}

const journaled = (scratch: Scratch) =>
  JSON.parse(readFileSync(path.join(scratch.stateDir, 'migration-journal.json'), 'utf8'));

test('SIGTERM as the first replace of a dual-stack migration begins: a clean exit 0, both families in one mode, one restart in all', (t) =>
  interruptedMigration(t, 'term-during-replace', ({ ns, scratch }) => {
    const v4 = ns.routes('10.96.0.0/16');
    const v6 = ns.routes('fd00:10:96::/112');
    const local = [v4[0]?.includes('ovn-k8s-mp0'), v6[0]?.includes('ovn-k8s-mp0')];
    assert.equal(local[0], local[1], `both families in one mode: ${v4} | ${v6}`);
    if (local[0]) assert.equal(journaled(scratch).migration.mode, 'local', 'a migration carried out is on record');
  }));

test('SIGTERM with the second replace of a dual-stack migration held past the stop grace: abandoned, exit 0, half done; the next agent completes it from the journal, one restart in all', (t) =>
  interruptedMigration(t, 'term-held-between-replaces', ({ ns, scratch, ovnkube, logs }) => {
    assert.ok(
      logs.some((l) => l.msg === 'the pass under way did not finish: abandoning it'),
      'the pass was abandoned',
    );
    const local = [
      ns.routes('10.96.0.0/16')[0]?.includes('ovn-k8s-mp0'),
      ns.routes('fd00:10:96::/112')[0]?.includes('ovn-k8s-mp0'),
    ];
    assert.deepEqual(local.filter(Boolean).length, 1, `one family replaced, the other not, nothing put back: ${local}`);
    assert.equal(journaled(scratch).migration.mode, 'local', 'the migration is on record');
    assert.equal(ovnkube.starts, 1, 'no restart requested by the first agent');
  }));
