// The agent on a real OVN node (test/helpers/ovn.ts), with service traffic as the judge: a
// new TCP connection to the ClusterIP every 20 ms (0.5 s timeout) runs through each test.
// The bed's paths: via ovn-k8s-mp0 to the node switch's load balancer (4.8/4.9 local mode);
// with gatewayRouter, via br-ex to a gateway router's load balancer (shared mode, and every
// mode from 4.10). What each test asserts is probe failure counts and what changed, never time.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { AgentProcess, FakeOvnkube, Scratch, waitForStatus } from '../helpers/agent.js';
import {
  BED,
  failedIn,
  skipWithoutOvn,
  standinWindows,
  withOvnSeries,
  type OvnBed,
  type ProbeResult,
} from '../helpers/ovn.js';
import { serviceRouteOf, startBody, type Version } from '../helpers/ovn-standin.js';
import { within } from '../helpers/wait.js';

const ARGS = ['--service-cidr', BED.svc, '--mtu', '1400'];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Epoch ms of the agent's log lines whose message starts with `prefix`. */
const logTimes = (agent: AgentProcess, prefix: string): number[] =>
  agent
    .logs()
    .filter((l) => String(l.msg).startsWith(prefix))
    .map((l) => Date.parse(String(l.time)));

/**
 * Failed probes that do not overlap the stand-in's own start-up windows (its flush of mp0, or its
 * delete and add of the service route), widened by 5 ms each side. A probe that began just before
 * a window can still lose its SYN or answer to it (a 0.5 s timeout, one CI run's case): what
 * counts is whether the connection's life overlapped the window, not when it began.
 */
const outsideStandin = (failed: ProbeResult[], marks: string): ProbeResult[] => {
  const windows = standinWindows(marks);
  return failed.filter((r) => !windows.some(([a, b]) => r.start <= b + 5 && r.end >= a - 5));
};

async function marksAtLeast(marks: string, n: number): Promise<void> {
  await within(
    (async () => {
      while (standinWindows(marks).length < n) await pause(10);
    })(),
    10_000,
    `ovnkube-node start-up #${n}`,
  );
}

/** A node with a stand-in ovnkube-node and an agent on the bed; all stopped after fn. */
async function onBed(
  bed: OvnBed,
  fn: (c: {
    scratch: Scratch;
    ovnkube: FakeOvnkube;
    marks: string;
    startAgent: (args: string[]) => AgentProcess;
  }) => Promise<void>,
): Promise<void> {
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(bed.node, scratch.dir);
  const agents: AgentProcess[] = [];
  try {
    await fn({
      scratch,
      ovnkube,
      marks: path.join(scratch.dir, 'marks'),
      startAgent: (args) => agents[agents.push(new AgentProcess(bed.node, scratch, args)) - 1]!,
    });
  } finally {
    for (const a of agents) await a.stop();
    ovnkube.stop();
    scratch.remove();
  }
}

const summary = (t: TestContext, what: string, results: ProbeResult[]) =>
  t.diagnostic(`${what}: ${results.length} probes, ${results.filter((r) => !r.ok).length} failed`);

test("4.8/4.9 shared -> local on a real OVN: service traffic broken by the stale route is back with the agent's replace and no probe fails through its restart of ovnkube-node", async (t) => {
  if (skipWithoutOvn(t)) return;
  await withOvnSeries(t, {}, async (bed) => {
    await onBed(bed, async ({ scratch, ovnkube, marks, startAgent }) => {
      // The node ran shared (up.sh leaves the stale br-ex route); the rollout started ovnkube-node
      // in local mode, whose create-exclusive add of the mp0 route hit EEXIST: the bug.
      ovnkube.start('local', { respawn: true, body: startBody('4.8', 'local', marks) });
      await marksAtLeast(marks, 1);
      const probe = bed.probe();
      const broken = await probe.until((r) => !r.ok);
      scratch.writeMode('local');
      const agent = startAgent([...ARGS, '--layout', 'legacy']);
      await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
      await marksAtLeast(marks, 2);
      const [replacedAt] = logTimes(agent, 'replaced route 10.96.0.0/16');
      assert.ok(replacedAt, 'the agent replaced the route');
      // Some probes after the agent's restart of ovnkube-node, then the series ends.
      await probe.until((r) => r.ok, Date.now() + 300);
      const results = await probe.stop();

      assert.ok(broken.start < replacedAt);
      const before = failedIn(results, 0, replacedAt);
      const after = failedIn(results, replacedAt + 1);
      summary(
        t,
        'before the replace',
        results.filter((r) => r.start < replacedAt),
      );
      summary(
        t,
        'after the replace',
        results.filter((r) => r.start > replacedAt),
      );
      t.diagnostic(
        `failed after the replace inside ovnkube-node's own start-up (flush of mp0): ${after.length - outsideStandin(after, marks).length}`,
      );
      assert.ok(before.length > 0, 'the stale route broke service traffic');
      assert.deepEqual(
        outsideStandin(after, marks),
        [],
        "no probe fails after the replace but inside the restarted ovnkube-node's own flush of mp0",
      );
      assert.ok(results.some((r) => r.ok && r.start > replacedAt));
      assert.deepEqual(bed.node.routes(BED.svc), [serviceRouteOf('4.8', 'local')]);
      assert.equal(ovnkube.starts, 2, 'exactly one restart of ovnkube-node');
      assert.equal(logTimes(agent, 'restarting ovnkube-node').length, 1);
    });
  });
});

test("4.8/4.9 local -> shared on a real OVN: the agent writes nothing, ovnkube-node's restart in shared mode restores the br-ex route, and service traffic holds but for that restart's own flush", async (t) => {
  if (skipWithoutOvn(t)) return;
  // Both paths lead to the service: mp0 to the node switch's load balancer, br-ex to the gateway router's.
  await withOvnSeries(t, { gatewayRouter: true }, async (bed) => {
    await onBed(bed, async ({ scratch, ovnkube, marks, startAgent }) => {
      bed.setServiceRoute(serviceRouteOf('4.8', 'local'));
      ovnkube.start('local', { respawn: true, body: startBody('4.8', 'local', marks) });
      await marksAtLeast(marks, 1);
      const probe = bed.probe();
      scratch.writeMode('shared');
      const agent = startAgent([...ARGS, '--layout', 'legacy']);
      await waitForStatus(
        agent,
        (s) => s.desiredMode === 'shared' && s.ovnkubeMode === 'local',
        'waiting for the rollout',
      );
      // The operator's rollout: ovnkube-node again, in shared mode.
      const rollout = Date.now();
      ovnkube.start('shared', { respawn: true, body: startBody('4.8', 'shared', marks) });
      await marksAtLeast(marks, 2);
      const s = await waitForStatus(
        agent,
        (s) => s.phase === 'Converged' && s.ovnkubeMode === 'shared',
        'Converged in shared',
      );
      await probe.until((r) => r.ok, Date.now() + 300);
      const results = await probe.stop();

      const failed = failedIn(results, 0);
      summary(t, "through the agent's start and the rollout", results);
      t.diagnostic(
        `failed inside the new ovnkube-node's own start-up (flush of mp0, br-ex route added): ${failed.length - outsideStandin(failed, marks).length}`,
      );
      assert.deepEqual(outsideStandin(failed, marks), []);
      assert.ok(results.some((r) => r.ok && r.start > rollout));
      assert.deepEqual(bed.node.routes(BED.svc), [serviceRouteOf('4.8', 'shared')]);
      assert.deepEqual(logTimes(agent, 'replaced route'), [], 'the agent wrote no route');
      assert.deepEqual(logTimes(agent, 'restarting ovnkube-node'), []);
      assert.equal(ovnkube.starts, 2, 'only the rollout restarted ovnkube-node');
      assert.equal(s.routes[0]?.inSync, true);
    });
  });
});

const OS_RELEASE = (v: string) =>
  `NAME="Red Hat Enterprise Linux CoreOS"\nVERSION="${v.replace('.', '')}.84.202210041459-0"\nID="rhcos"\nID_LIKE="rhel fedora"\nVERSION_ID="${v}"\nOPENSHIFT_VERSION="${v}"\nRHEL_VERSION="8.6"\n`;

/** Whether one connection to the ClusterIP answers within 0.5 s from the node. */
const serviceAnswers = (bed: OvnBed) =>
  spawnSync('ip', ['netns', 'exec', bed.node.name, 'curl', '-sf', '-o', '/dev/null', '-m', '0.5', `http://${BED.vip}/`])
    .status === 0;

for (const version of ['4.10', '4.11', '4.12'] as Version[]) {
  test(`${version}${version === '4.12' ? '+' : ''} on a real OVN (routingViaHost, --layout legacy said wrongly): the agent changes nothing and restarts nothing, and no probe fails through its start and a rollout`, async (t) => {
    if (skipWithoutOvn(t)) return;
    // br-ex is the only way to the service (no load balancer on the node switch): a route moved to mp0 would fail every probe.
    await withOvnSeries(t, { gatewayRouter: true, switchLb: false }, async (bed) => {
      await onBed(bed, async ({ scratch, ovnkube, marks, startAgent }) => {
        const route = serviceRouteOf(version, 'local');
        if (version === '4.10') {
          bed.setServiceRoute(serviceRouteOf('4.8', 'local'));
          assert.equal(serviceAnswers(bed), false, 'on this bed the mp0 route does not reach the service');
        }
        bed.setServiceRoute(route);
        ovnkube.start('local', { respawn: true, body: startBody(version, 'local', marks) });
        await marksAtLeast(marks, 1);
        const initial = bed.node.routes(BED.svc);
        // The baseline, before the agent: the service answers on ovnkube-node's route. The very first
        // connection through the userspace datapath can take longer than the probe's 0.5 s (flows and
        // neighbours being set up after ovnkube-node's start-up; one CI run's first probe): what is
        // judged is the agent's start and the rollout, from a node that serves.
        await within(
          (async () => {
            while (!serviceAnswers(bed)) await pause(50);
          })(),
          10_000,
          "the service answering on ovnkube-node's route before the agent starts",
        );
        const osRelease = path.join(scratch.dir, 'os-release');
        writeFileSync(osRelease, OS_RELEASE(version));
        const probe = bed.probe();
        scratch.writeMode('local');
        const agent = startAgent([...ARGS, '--layout', 'legacy', '--os-release', osRelease]);
        await waitForStatus(agent, (s) => s.lastReconcile !== null, 'a first pass');
        // The operator's rollout: a new ovnkube-node, local mode again; then a pass that saw it.
        const rollout = Date.now();
        ovnkube.start('local', { respawn: true, body: startBody(version, 'local', marks) });
        await marksAtLeast(marks, 2);
        const s = await waitForStatus(
          agent,
          (s) => Date.parse(s.lastReconcile ?? '') > rollout + 50,
          'a pass after the rollout',
        );
        const results = await probe.stop();

        summary(t, "through the agent's start and a rollout", results);
        assert.deepEqual(failedIn(results, 0), [], 'no probe failed');
        assert.deepEqual(bed.node.routes(BED.svc), initial, 'the route is exactly as ovnkube-node made it');
        assert.deepEqual(logTimes(agent, 'replaced route'), []);
        assert.deepEqual(logTimes(agent, 'restarting ovnkube-node'), []);
        assert.equal(ovnkube.starts, 2, 'only the rollout restarted ovnkube-node');
        assert.equal(s.layout, 'routing-via-host');
        assert.equal(s.phase, 'Converged');
        assert.ok(s.reasonCodes.includes('RoutingViaHostLayout'), s.reasonCodes.join(', '));
        assert.equal((s as unknown as { platform?: { release: string } }).platform?.release, '4.10+');
      });
    });
  });
}
