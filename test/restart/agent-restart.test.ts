// The agent restarting ovnkube-node, end to end: a real kernel namespace, a real
// containerd over CRI (the test plays kubelet), real processes for the signal strategy.
import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { AgentProcess, FAULTY, Scratch, waitForStatus, withAgent } from '../helpers/agent.js';
import { seedNode, skipWithoutKernel, type Netns } from '../helpers/netns.js';
import { Containerd, containerdSkipReason, ovnkubeCommand, type Pod } from '../helpers/containerd.js';
import { IDLE } from '../../src/demo/fake-ovnkube.js';

const LOCAL_V4 = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';
const SHARED_V4 = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';
const FAST = ['--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--settle', '500ms', '--restart-timeout', '60'];

test('signal: migrates, restarts ovnkube-node once, waits for the new one and the settle window', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent(
    { mode: 'local', fake: { respawn: true }, args: [...FAST, '--restart', 'signal'] },
    async ({ ns, ovnkube, agent }) => {
      const s = await waitForStatus(
        agent,
        (s) => s.phase === 'Converged' && s.restart?.count === 1,
        'Converged after a restart',
      );
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
      assert.equal(ovnkube.starts, 2, 'one restart: the first process and its successor');
      assert.equal(s.restart?.last?.result, 'stopped');
      assert.equal(s.restart?.strategy, 'signal');
      const phases = agent
        .logs()
        .filter((l) => String(l.msg).startsWith('phase '))
        .map((l) => l.to);
      assert.ok(phases.includes('Progressing'), `went through Progressing: ${phases.join(',')}`);
    },
  );
});

test('never fights: a route set back again and again suspends repairs, and a new ovnkube-node lifts that', async (t) => {
  if (skipWithoutKernel(t)) return;
  // A stand-in that keeps putting the shared-mode route back, as a shared-mode (or
  // fixed z-stream) ovnkube-node would while claiming local mode.
  const fighter = `trap "exit 0" TERM; while :; do ip route replace ${SHARED_V4}; sleep 0.3; done`;
  await withAgent(
    { mode: 'local', fake: { body: fighter }, args: [...FAST, '--restart', 'none'] },
    async ({ ns, ovnkube, agent }) => {
      const s = await waitForStatus(
        agent,
        (s) => s.phase === 'Degraded' && s.routes[0]?.repairsSuspended != null,
        'repairs suspended',
      );
      assert.match(
        s.reasons[0] ?? '',
        /^route set back to via 172\.18\.0\.1 dev br-ex mtu 1400 3 times in 10 min: is ovnkube-node really running local gateway mode on a 4\.8\/4\.9 build\?/,
      );
      const replaces = agent.logs().filter((l) => String(l.msg).startsWith('replaced route')).length;
      assert.equal(replaces, 3, 'the first replace and two repairs, then no more');

      ovnkube.start('local');
      ns.ip(`route replace ${SHARED_V4}`);
      await waitForStatus(
        agent,
        (s) => s.phase === 'Converged' && s.routes[0]?.repairsSuspended === null,
        'Converged with a new ovnkube-node',
      );
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
    },
  );
});

test('the rate limit: a fourth restart within the hour waits, Progressing, until the limit allows it', async (t) => {
  if (skipWithoutKernel(t)) return;
  const journalOf = (scratch: Scratch) => {
    const now = Date.now();
    mkdirSync(scratch.stateDir, { recursive: true });
    const restarts = [50, 30, 10].map((m) => now - m * 60_000);
    writeFileSync(
      path.join(scratch.stateDir, 'migration-journal.json'),
      JSON.stringify({ version: 2, migration: null, restarts }),
    );
  };
  await withAgent(
    {
      mode: 'local',
      fake: { respawn: true },
      setup: (_ns, scratch) => journalOf(scratch),
      args: [...FAST, '--restart', 'signal'],
    },
    async ({ ns, ovnkube, agent }) => {
      const s = await waitForStatus(agent, (s) => s.reasonCodes[0] === 'RestartRateLimited', 'the rate limit');
      assert.equal(s.phase, 'Progressing');
      assert.match(
        s.reasons[0] ?? '',
        /^waiting until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z to restart ovnkube-node for the migration to local \(the restart rate limit: 3 restarts in the last hour \(at most 3\)\)$/,
      );
      assert.equal(s.reasonCodes[0], 'RestartRateLimited');
      assert.equal(s.restart?.required, true);
      assert.equal(ovnkube.starts, 1, 'not signalled');
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
    },
  );
});

async function withContainerd(
  t: { name: string; skip: (m: string) => void },
  fn: (ns: Netns, scratch: Scratch, cd: Containerd, pods: Pod[]) => Promise<void>,
): Promise<void> {
  if (containerdSkipReason) {
    process.stderr.write(`SKIPPED (${containerdSkipReason}): ${t.name}\n`);
    t.skip(containerdSkipReason);
    return;
  }
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  let cd: Containerd | undefined;
  const pods: Pod[] = [];
  try {
    cd = await Containerd.start(ns, mkdtempSync(path.join(scratch.dir, 'containerd-')));
    await fn(ns, scratch, cd, pods);
  } finally {
    await cd?.stop(pods);
    ns.destroy();
    scratch.remove();
  }
}

test('cri: stops exactly the ovnkube-node container, and converges once kubelet started the next one', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withContainerd(t, async (ns, scratch, cd, pods) => {
    const pod = await cd.runPod('openshift-ovn-kubernetes', 'ovnkube-node-x7k2p');
    const other = await cd.runPod('kube-system', 'ovnkube-node-decoy');
    pods.push(pod, other);
    const target = await cd.startContainer(pod, 'ovnkube-node', 0, ovnkubeCommand('local'));
    const sibling = await cd.startContainer(pod, 'ovn-controller', 0, ['/bin/sh', '-c', IDLE]);
    const decoy = await cd.startContainer(other, 'ovnkube-node', 0, ['/bin/sh', '-c', IDLE]);
    scratch.writeMode('local');
    const agent = new AgentProcess(ns, scratch, [
      ...FAST,
      '--restart',
      'cri',
      '--cri-endpoint',
      cd.socket,
      '--restart-grace',
      '5',
    ]);
    try {
      // The pass does not wait for StopContainer: its answer is recorded by a later pass.
      await waitForStatus(
        agent,
        (s) =>
          s.phase === 'Progressing' &&
          /waiting for a new one running local/.test(s.reasons[0] ?? '') &&
          s.restart?.last?.result === 'stopped',
        'the stop done, waiting for the new container',
      );
      assert.equal(await cd.state(target), 'CONTAINER_EXITED');
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);

      // Play kubelet: the next attempt of the same container.
      const next = await cd.startContainer(pod, 'ovnkube-node', 1, ovnkubeCommand('local'));
      const s = await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged after the settle window');
      assert.equal(s.restart?.count, 1);
      assert.equal(s.restart?.last?.result, 'stopped');
      assert.match(s.restart?.last?.target ?? '', /ovnkube-node-x7k2p, attempt 0/);
      assert.equal(await cd.state(next), 'CONTAINER_RUNNING');
      assert.equal(await cd.state(sibling), 'CONTAINER_RUNNING', 'other containers of the pod are never stopped');
      assert.equal(await cd.state(decoy), 'CONTAINER_RUNNING', 'containers of other namespaces are never stopped');
    } finally {
      await agent.stop();
    }
  });
});

test('cri: an agent killed between journal and restart does not stop the container when it comes back', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withContainerd(t, async (ns, scratch, cd, pods) => {
    const pod = await cd.runPod('openshift-ovn-kubernetes', 'ovnkube-node-j0urn');
    pods.push(pod);
    const target = await cd.startContainer(pod, 'ovnkube-node', 0, ovnkubeCommand('local'));
    scratch.writeMode('local');
    // A short restart timeout and interval: the test need not wait minutes for the retry.
    // The timeout still outlasts the next agent's start (about half a second), so that
    // agent finds the restart pending and waits it out.
    const args = [
      ...FAST,
      '--restart',
      'cri',
      '--cri-endpoint',
      cd.socket,
      '--restart-timeout',
      '2',
      '--restart-min-interval',
      '1',
    ];
    const first = new AgentProcess(ns, scratch, args, { GWMODE_FAULT: 'kill-after-restart-journal' }, FAULTY);
    await first.exited;
    assert.equal(first.child.signalCode, 'SIGKILL');
    assert.equal(await cd.state(target), 'CONTAINER_RUNNING', 'killed before the restart was requested');

    // The next agent finds the restart journaled but never carried out: once the
    // restart timeout shows the very same container still running, it stops that one.
    const second = new AgentProcess(ns, scratch, args);
    try {
      await waitForStatus(
        second,
        () => second.logs().some((l) => String(l.msg).startsWith('restarting ovnkube-node')),
        'the owed restart',
      );
      await waitForStatus(second, (s) => s.restart?.last?.result === 'stopped', 'the container stopped');
      assert.equal(await cd.state(target), 'CONTAINER_EXITED', 'the restart happened');
      const next = await cd.startContainer(pod, 'ovnkube-node', 1, ovnkubeCommand('local'));
      const s = await waitForStatus(second, (s) => s.phase === 'Converged', 'Converged');
      assert.equal(s.restart?.migration?.restart, 'done');
      assert.equal(await cd.state(next), 'CONTAINER_RUNNING', 'the new one is never stopped');
      assert.equal(
        second.logs().filter((l) => String(l.msg).startsWith('restarting ovnkube-node')).length,
        1,
        'one stop, of the same container',
      );
    } finally {
      await second.stop();
    }
  });
});
