// A dual-stack migration the kernel refuses in one family, on the real kernel: ovn-k8s-mp0
// keeps its IPv6 address but lost the on-link route of its subnet, so the IPv6 replace
// fails with EHOSTUNREACH and the IPv4 route is put back. The notifications of the agent's
// own replace and put-back must not wake the next pass: it waits out its backoff (1 s,
// 2 s, 4 s), each retry is one flap of the IPv4 route, and the third flap suspends the
// repairs. Counted from the agent's log lines and the kernel's notifications, never timed.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { skipWithoutKernel } from '../helpers/netns.js';
import { waitForStatus, withAgent, type AgentProcess } from '../helpers/agent.js';

/** The agent's log lines once one matches pred (polled, with a bound that is a safety net, not a speed check). */
async function logsUntil(
  agent: AgentProcess,
  pred: (l: Record<string, unknown>) => boolean,
): Promise<Array<Record<string, unknown>>> {
  for (let i = 0; i < 600; i++) {
    const logs = agent.logs();
    if (logs.some(pred)) return logs;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never logged; output:\n${agent.output.slice(-4000)}`);
}

const V4_SHARED = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';

test('a refused IPv6 replace: one failed pass per backoff step (not one per notification of its own writes), three IPv4 flaps, then the repairs suspended and the IPv4 route as it was', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent(
    {
      node: { gw0: true, ipv6: true },
      mode: 'local',
      args: ['--service-cidr', '10.96.0.0/16,fd00:10:96::/112', '--mtu', '1400'],
      // Before the agent starts: its first pass already meets the broken node.
      setup: (ns) => ns.ip('-6 route del fd00:10:244:1::/64 dev ovn-k8s-mp0'),
    },
    async ({ ns, agent }) => {
      // The kernel's own account of the IPv4 service route: every change of it, by anyone.
      const monitor = spawn('ip', ['-n', ns.name, '-4', 'monitor', 'route'], { stdio: ['ignore', 'pipe', 'ignore'] });
      let seen = '';
      monitor.stdout.on('data', (d: Buffer) => (seen += d.toString()));
      try {
        const held = await waitForStatus(
          agent,
          (s) => s.reasonCodes[0] === 'RepairsSuspended',
          'the repairs suspended',
        );
        assert.equal(held.phase, 'Degraded');
        assert.match(
          held.reasons[0] ?? '',
          /3 times in 10 min: the agent put it back itself .*EHOSTUNREACH.*; repairs of 10\.96\.0\.0\/16 suspended$/,
        );
        assert.deepEqual(ns.routes('10.96.0.0/16'), [V4_SHARED], 'IPv4 left as it was');
        // The log reaches the pipe after the status does: wait for the line of the same phase change.
        const logs = await logsUntil(
          agent,
          (l) => l.msg === 'phase Degraded' && (l.codes as string[])[0] === 'RepairsSuspended',
        );
        const failed = logs.filter((l) => l.msg === 'reconcile failed');
        const replaced = logs.filter((l) => String(l.msg).startsWith('replaced route 10.96.0.0/16'));
        const putBack = logs.filter((l) => String(l.msg).startsWith('put back 10.96.0.0/16'));
        // One failed pass per backoff step; the 4th pass found the third put-back and suspended.
        assert.equal(failed.length, 3, `failed passes: ${failed.length}`);
        assert.deepEqual(
          failed.map((l) => (l.err as { code?: string }).code),
          ['EHOSTUNREACH', 'EHOSTUNREACH', 'EHOSTUNREACH'],
        );
        // Each retry waited its backoff step (jittered between half and all of 1 s, 2 s, 4 s).
        failed.forEach((l, i) =>
          assert.ok(
            Number(l.retryInMs) >= 500 * 2 ** i && Number(l.retryInMs) <= 1000 * 2 ** i,
            `retry ${i + 1} in ${String(l.retryInMs)} ms`,
          ),
        );
        // And each next pass was woken by its retry timer, not run at once after the failure.
        const sequence = logs
          .filter((l) => l.msg === 'reconcile failed' || (l.msg === 'wake-up' && l.why === 'retry'))
          .map((l) => (l.msg === 'wake-up' ? 'retry' : 'failed'));
        assert.deepEqual(sequence.slice(0, 6), ['failed', 'retry', 'failed', 'retry', 'failed', 'retry']);
        assert.deepEqual(
          logs.filter((l) => l.msg === 'wake-up' && String(l.why).startsWith('route ')).map((l) => l.why),
          [],
          'no pass woken by a route notification',
        );
        assert.equal(replaced.length, 3, 'three IPv4 replaces');
        assert.equal(putBack.length, 3, 'three put-backs');
        assert.ok(
          logs.filter((l) => l.msg === 'route notification of our own write: no wake-up').length >= 1,
          'its own notifications seen, and swallowed',
        );
        // Whatever comes later (resyncs every 2 s here) changes the IPv4 route no more.
        const before = seen;
        await waitForStatus(
          agent,
          (s) => s.reasonCodes[0] === 'RepairsSuspended' && s.lastReconcile !== held.lastReconcile,
          'a pass after the suspension',
        );
        assert.deepEqual(ns.routes('10.96.0.0/16'), [V4_SHARED]);
        assert.equal(seen.slice(before.length).includes('ovn-k8s-mp0'), false, 'no move of IPv4 after the suspension');
        const flapsSeen = seen
          .split('\n')
          .filter((l) => l.startsWith('10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0')).length;
        assert.ok(flapsSeen <= 3, `the kernel announced ${flapsSeen} moves of IPv4 to mp0`);
      } finally {
        monitor.kill();
      }
    },
  );
});
