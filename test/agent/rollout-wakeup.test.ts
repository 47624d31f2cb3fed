// The operator's rollout wakes the agent through the kernel, on every kernel: the new 4.8/4.9
// ovnkube-node's start flushes and re-adds ovn-k8s-mp0's address (ovn-org/ovn-kubernetes
// d7252e0de, go-controller/pkg/node/management-port_linux.go: createPlatformManagementPort ->
// tearDownManagementPortConfig, LinkAddrFlush and LinkRoutesDel, then LinkAddrAdd), and every
// address notification wakes a pass that scans /proc in full (src/agent/inputs.ts); a local start
// also sets up ovn-k8s-gw0, whose link notification wakes it too, whichever comes first (the
// address path alone: test/agent/loop.test.ts, "the rollout's new ovnkube-node wakes"). Proven here
// with pidfd_open failing ENOSYS (test/fixtures/no-pidfd.c, as on a kernel before 5.3) and no
// timer of the agent able to fire (GWMODE_FAULT=no-timers): only the notification can wake it.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { AgentProcess, FAULTY, noPidfd, Scratch, waitForStatus } from '../helpers/agent.js';
import { kernelSkipReason, seedNode } from '../helpers/netns.js';
import { StandinOvnkube } from '../helpers/ovnkube-standin.js';

test(
  "with pidfd_open failing ENOSYS and no timer firing, the rollout's new local ovnkube-node is acted on through its own flush of ovn-k8s-mp0",
  { skip: kernelSkipReason },
  async () => {
    const ns = seedNode();
    const scratch = new Scratch();
    const standin = new StandinOvnkube(ns, scratch.dir, '4.8');
    let agent: AgentProcess | undefined;
    try {
      standin.start('shared', { respawn: true });
      await standin.ready();
      scratch.writeMode('local');
      const args = ['--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--resync-interval', '1h', '--restart', 'none'];
      agent = new AgentProcess(ns, scratch, args, { GWMODE_FAULT: 'no-timers' }, FAULTY, noPidfd());
      const replaced = () => agent!.logs().filter((l) => String(l.msg).startsWith('replaced route'));
      const waiting = await waitForStatus(
        agent,
        (s) => s.ovnkubeMode === 'shared',
        'waiting on the shared ovnkube-node',
      );
      assert.equal(waiting.routes[0]?.observed?.dev, 'br-ex');
      standin.start('local', { respawn: true });
      await waitForStatus(
        agent,
        (s) => s.ovnkubeMode === 'local' && s.routes[0]?.observed?.dev === 'ovn-k8s-mp0' && replaced().length > 0,
        'the replace to the mp0 route',
      );
      assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0'], agent.output);
      assert.equal(replaced().length, 1);
    } finally {
      await agent?.stop();
      standin.stop();
      ns.destroy();
      scratch.remove();
    }
  },
);
