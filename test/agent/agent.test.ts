// The agent as an admin runs it: a real kernel namespace, a real mode file, the
// status read with real curl, the CLI as a separate process.
import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { seedNode, skipWithoutKernel, type Netns } from '../helpers/netns.js';
import { spawnSync } from 'node:child_process';
import {
  AgentProcess,
  CLI,
  cli,
  curl,
  DROP_PTRACE,
  FakeOvnkube,
  Scratch,
  status,
  waitForStatus,
  withAgent,
  withNode,
} from '../helpers/agent.js';
import { ConfigMapVolume } from '../helpers/kubelet.js';
import { IDLE } from '../../src/demo/fake-ovnkube.js';
import { writeOsRelease } from '../helpers/os-release.js';

const LOCAL_V4 = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';
const SHARED_V4 = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';

test("converges the seed's node to local mode and says so over the socket", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local\n' }, async ({ ns, agent }) => {
    const s = await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
    assert.equal(s.desiredMode, 'local');
    assert.equal(s.ovnkubeMode, 'local');
    assert.equal(s.layout, 'legacy');
    assert.deepEqual(s.routes, [
      {
        cidr: '10.96.0.0/16',
        family: 4,
        observed: { dev: 'ovn-k8s-mp0', via: '10.244.1.1', mtu: null },
        expected: { dev: 'ovn-k8s-mp0', via: '10.244.1.1', mtu: null },
        inSync: true,
        repairsSuspended: null,
      },
    ]);
    // The migration owed one restart of ovnkube-node (the stand-in plays kubelet), done.
    assert.equal(s.restart?.required, false);
    assert.equal(s.restart?.count, 1);
    assert.equal(s.restart?.migration?.restart, 'done');
    // Said once, when the restart became done.
    const settle = agent.logs().filter((l) => String(l.msg).startsWith('a new ovnkube-node runs the desired mode'));
    assert.equal(settle.length, 1);
    assert.deepEqual(s.reasonCodes, ['InSync']);
    assert.ok(s.warnings.some((w) => /egress firewall/.test(w)));
    const change = agent.logs().find((l) => String(l.msg).startsWith('replaced route 10.96.0.0/16'));
    assert.equal(change?.before, 'via 172.18.0.1 dev br-ex mtu 1400');
    assert.equal(change?.after, 'via 10.244.1.1 dev ovn-k8s-mp0');
    assert.equal(statSync(agent.scratch.socket).mode & 0o777, 0o660);
    assert.equal(statSync(path.dirname(agent.scratch.socket)).mode & 0o777, 0o750);
    assert.equal(curl(agent.scratch.socket, '/healthz').code, 200);
    assert.equal(curl(agent.scratch.socket, '/readyz').code, 200);
    assert.equal(curl(agent.scratch.socket, '/nope').code, 404);
    assert.equal(curl(agent.scratch.socket, '/status', 'POST').code, 405);
  });
});

test('converges a dual-stack node, each family via its own next hop', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent(
    {
      node: { gw0: true, ipv6: true },
      mode: 'local',
      args: ['--service-cidr', '10.96.0.0/16,fd00:10:96::/112', '--mtu', '1400'],
    },
    async ({ ns, agent }) => {
      await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
      assert.match(ns.routes('fd00:10:96::/112')[0] ?? '', /^fd00:10:96::\/112 via fd00:10:244:1::1 dev ovn-k8s-mp0 /);
    },
  );
});

/** A shared-mode ovnkube-node as it starts: it drops its mp0 service route and adds the br-ex one itself. */
const SHARED_START = `ip route del 10.96.0.0/16 dev ovn-k8s-mp0 2>/dev/null; ip route add 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400; ${IDLE}`;

test("back to shared: ovnkube-node's restart by the rollout heals the node; the agent writes nothing and restarts nothing", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ ns, scratch, ovnkube, agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged' && s.desiredMode === 'local', 'local Converged');
    scratch.writeMode('shared');
    // Desired shared while ovnkube-node still runs local: the agent waits, and says who heals it.
    const waiting = await waitForStatus(
      agent,
      (s) => s.phase === 'Waiting' && s.reasonCodes[0] === 'OvnkubeOtherMode',
      'Waiting on ovnkube',
    );
    assert.match(waiting.reasons[0] ?? '', /rollout restarts it in shared mode/);
    assert.equal(waiting.restart?.required, false, 'no restart is owed for shared');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
    ovnkube.start('shared', { respawn: true, body: SHARED_START });
    const s = await waitForStatus(
      agent,
      (s) => s.phase === 'Converged' && s.desiredMode === 'shared' && s.reasonCodes[0] === 'InSync',
      'shared Converged',
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
    assert.deepEqual([s.restart?.count, s.restart?.required], [1, false], "only the local migration's restart");
    assert.equal(
      agent.logs().filter((l) => String(l.msg).startsWith('replaced route')).length,
      1,
      'only the replace towards local',
    );
  });
});

test("shared desired, a br-ex route whose MTU is not ovn-k8s-mp0's: in sync, a warning; no write, no restart", async (t) => {
  if (skipWithoutKernel(t)) return;
  const setup = (ns: Netns) => ns.ip('route replace 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 9000');
  await withAgent(
    { mode: 'shared', ovnkube: 'shared', setup, args: ['--service-cidr', '10.96.0.0/16'] },
    async ({ ns, ovnkube, agent }) => {
      const s = await waitForStatus(
        agent,
        (s) => s.phase === 'Converged' && s.desiredMode === 'shared',
        'shared Converged',
      );
      assert.deepEqual([s.reasonCodes[0], s.routes[0]?.inSync], ['InSync', true]);
      assert.ok(
        s.warnings.some((w) => /carries mtu 9000, the agent expected 1400/.test(w)),
        JSON.stringify(s.warnings),
      );
      assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 9000']);
      assert.deepEqual([s.restart?.count, ovnkube.starts], [0, 1]);
    },
  );
});

test('every failing precondition leaves the route alone and names the reason', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local', ovnkube: null }, async ({ ns, ovnkube, agent }) => {
    await waitForStatus(
      agent,
      (s) => s.phase === 'Waiting' && s.reasons.some((r) => /no ovnkube --init-node process/.test(r)),
      'no ovnkube',
    );
    ovnkube.start('shared');
    await waitForStatus(
      agent,
      (s) => s.reasons.some((r) => /runs --gateway-mode shared, desired local/.test(r)),
      'ovnkube shared',
    );
    // mp0 goes down before ovnkube-node runs local: the other order lets the agent
    // migrate in between (it looks every second while waiting on ovnkube-node).
    ns.ip('link set ovn-k8s-mp0 down');
    ovnkube.start('local');
    await waitForStatus(
      agent,
      (s) => s.phase === 'Waiting' && s.reasons.some((r) => /ovn-k8s-mp0 is down/.test(r)),
      'mp0 down',
    );
    // The address goes before the link comes up: up with its address and ovnkube-node
    // local, the agent may migrate in between (seen under load).
    ns.ip('addr flush dev ovn-k8s-mp0');
    ns.ip('link set ovn-k8s-mp0 up');
    await waitForStatus(agent, (s) => s.reasons.some((r) => /ovn-k8s-mp0: no IPv4 address/.test(r)), 'mp0 no address');
    ns.ip('link del ovn-k8s-mp0');
    await waitForStatus(agent, (s) => s.reasons.some((r) => /ovn-k8s-mp0 does not exist/.test(r)), 'mp0 missing');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
    assert.equal(agent.logs().filter((l) => String(l.msg).startsWith('replaced route')).length, 0);
  });
});

test('no version evidence waits and asks for --layout legacy, a leftover ovn-k8s-gw0 notwithstanding', async (t) => {
  if (skipWithoutKernel(t)) return;
  const args = ['--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--os-release', '/nonexistent/os-release'];
  await withAgent({ node: { gw0: true }, mode: 'local', args }, async ({ ns, agent }) => {
    const s = await waitForStatus(
      agent,
      (s) => s.lastReconcile !== null && s.desiredMode === 'local' && s.layout === 'unknown' && s.phase === 'Waiting',
      'unknown layout',
    );
    assert.ok(s.reasonCodes.includes('LayoutUnknown'));
    assert.ok(
      s.reasons.some((r) =>
        /\/nonexistent\/os-release: ENOENT.*link ovn-k8s-gw0 exists, which 4\.10 nodes show too: no proof.*--layout legacy/.test(
          r,
        ),
      ),
      JSON.stringify(s.reasons),
    );
    assert.deepEqual(s.platform.release, 'unknown');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
  });
});

// The issue's reproduction: ovnkube.conf as 4.10's operator renders it (CNO release-4.10
// c7855f1 bindata/network/ovn-kubernetes/004-config.yaml), a leftover ovn-k8s-gw0, the
// 4.10 route via br-ex's default gateway, and --layout legacy: on main the agent replaced it.
const OVNKUBE_CONF_410 = `[default]
mtu="1400"
cluster-subnets="10.244.0.0/16/24"
encap-port="6081"
enable-lflow-cache=true
lflow-cache-limit-kb=1048576

[kubernetes]
service-cidrs="10.96.0.0/16"
ovn-config-namespace="openshift-ovn-kubernetes"
apiserver="https://api-int.example:6443"
host-network-namespace="openshift-host-network"
platform-type="BareMetal"

[ovnkubernetesfeature]
enable-egress-ip=true
enable-egress-firewall=true

[gateway]
mode=local
nodeport=true
`;

test('a 4.10 node (ovnkube.conf with platform-type, a leftover ovn-k8s-gw0, --layout legacy) is never changed nor restarted', async (t) => {
  if (skipWithoutKernel(t)) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-410-'));
  const conf = path.join(dir, 'ovnkube.conf');
  writeFileSync(conf, OVNKUBE_CONF_410);
  try {
    for (const [what, osRelease] of [
      ['no os-release', ['--os-release', '/nonexistent/os-release']],
      ['an os-release of 4.9', []],
    ] as const) {
      const args = ['--ovnkube-config', conf, '--layout', 'legacy', ...osRelease];
      await withAgent({ node: { gw0: true }, mode: 'local', args }, async ({ ns, ovnkube, agent }) => {
        const s = await waitForStatus(
          agent,
          (s) => s.lastReconcile !== null && s.phase === 'Converged',
          `Converged (${what})`,
        );
        assert.deepEqual(
          [s.layout, s.platform.release, s.reasonCodes[0]],
          ['routing-via-host', '4.10+', 'RoutingViaHostLayout'],
        );
        assert.match(s.platform.evidence, /platform-type="BareMetal".*; --layout legacy ignored$/);
        assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
        assert.deepEqual([s.restart?.count, ovnkube.starts], [0, 1]);
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an RHCOS 4.10 os-release alone keeps the agent off the node, --layout legacy notwithstanding', async (t) => {
  if (skipWithoutKernel(t)) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-410-'));
  try {
    const args = [
      '--service-cidr',
      '10.96.0.0/16',
      '--mtu',
      '1400',
      '--layout',
      'legacy',
      '--os-release',
      writeOsRelease(dir, '4.10'),
    ];
    await withAgent({ node: { gw0: true }, mode: 'local', args }, async ({ ns, agent }) => {
      const s = await waitForStatus(agent, (s) => s.lastReconcile !== null && s.phase === 'Converged', 'Converged');
      assert.deepEqual([s.platform.release, s.reasonCodes[0]], ['4.10+', 'RoutingViaHostLayout']);
      assert.match(s.platform.evidence, /OPENSHIFT_VERSION=4\.10; --layout legacy ignored$/);
      assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the routing-via-host layout (4.10+) is left alone', async (t) => {
  if (skipWithoutKernel(t)) return;
  const setup = (ns: Netns) => {
    // The 4.12 shape: br-ex holds 169.254.169.2, service routes go via 169.254.169.4.
    ns.ip('addr add 169.254.169.2/29 dev br-ex');
    ns.ip('route replace 10.96.0.0/16 via 169.254.169.4 dev br-ex mtu 1400');
  };
  await withAgent({ node: { gw0: true }, mode: 'local', setup }, async ({ ns, agent }) => {
    const s = await waitForStatus(
      agent,
      (s) => s.layout === 'routing-via-host' && s.phase === 'Converged',
      'routing-via-host',
    );
    assert.ok(s.reasons.some((r) => /correct in both modes/.test(r)));
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 169.254.169.4 dev br-ex mtu 1400']);
  });
});

test("a 4.14+ node whose ovnkube.conf names its masquerade subnet as [Gateway] V4-Masquerade-Subnet (gcfg's names are case-insensitive) is left alone, a leftover ovn-k8s-gw0 notwithstanding", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch, ovnkube, startAgent }) => {
    const conf = path.join(scratch.dir, 'ovnkube.conf');
    writeFileSync(
      conf,
      '[Default]\nMTU="1400"\n[Kubernetes]\nService-CIDRs="10.96.0.0/16"\n[Gateway]\nMode=local\nV4-Masquerade-Subnet="100.98.0.0/16"\n',
    );
    ns.ip('addr add 100.98.0.2/16 dev br-ex');
    ns.ip('route replace 10.96.0.0/16 via 100.98.0.4 dev br-ex mtu 1400');
    scratch.writeMode('local');
    ovnkube.start('local', { respawn: true });
    const agent = startAgent(['--ovnkube-config', conf]);
    const s = await waitForStatus(
      agent,
      (s) => s.layout === 'routing-via-host' && s.phase === 'Converged',
      'routing-via-host',
    );
    assert.equal(s.reasonCodes[0], 'RoutingViaHostLayout');
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 100.98.0.4 dev br-ex mtu 1400']);
  });
});

test('a link route (no gateway) for a service CIDR is not ours, in both families: left alone, said why', async (t) => {
  if (skipWithoutKernel(t)) return;
  const setup = (ns: Netns) => {
    ns.ip('route replace 10.96.0.0/16 dev br-ex mtu 1400');
    ns.ip('-6 route replace fd00:10:96::/112 dev br-ex mtu 1400');
  };
  await withAgent(
    {
      node: { gw0: true, ipv6: true },
      mode: 'local',
      setup,
      args: ['--service-cidr', '10.96.0.0/16,fd00:10:96::/112', '--mtu', '1400'],
    },
    async ({ ns, agent }) => {
      const s = await waitForStatus(
        agent,
        (s) => s.lastReconcile !== null && s.desiredMode === 'local' && s.reasonCodes.includes('NotOurRoute'),
        'NotOurRoute',
      );
      assert.equal(s.phase, 'Waiting');
      for (const cidr of ['10.96.0.0/16', 'fd00:10:96::/112'])
        assert.ok(
          s.reasons.some((r) => r.includes(cidr) && /with no gateway \(a link route\)/.test(r)),
          `${cidr}: ${s.reasons.join('; ')}`,
        );
      assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 dev br-ex scope link mtu 1400']);
      assert.match(ns.routes('fd00:10:96::/112')[0] ?? '', /^fd00:10:96::\/112 dev br-ex metric 1024 mtu 1400/);
      assert.equal(agent.logs().filter((l) => String(l.msg).startsWith('replaced route')).length, 0);
    },
  );
});

test('a service route via inet6 (RTA_VIA) is refused NotOurRoute, the other CIDR still read; once it is a plain route again both move', async (t) => {
  if (skipWithoutKernel(t)) return;
  const setup = (ns: Netns) => ns.ip('route add 10.97.0.0/16 via inet6 fe80::1 dev br-ex');
  await withAgent(
    {
      node: { gw0: true, ipv6: true },
      mode: 'local',
      setup,
      args: ['--service-cidr', '10.96.0.0/16,10.97.0.0/16', '--mtu', '1400'],
    },
    async ({ ns, agent }) => {
      let s = await waitForStatus(
        agent,
        (s) => s.lastReconcile !== null && s.reasonCodes.includes('NotOurRoute'),
        'NotOurRoute',
      );
      assert.equal(s.phase, 'Waiting');
      assert.ok(
        s.reasons.some((r) => r.startsWith('10.97.0.0/16 has via inet6 fe80::1')),
        s.reasons.join('; '),
      );
      assert.deepEqual(s.routes.find((r) => r.cidr === '10.96.0.0/16')?.observed, {
        dev: 'br-ex',
        via: '172.18.0.1',
        mtu: 1400,
      });
      assert.deepEqual(ns.routes('10.97.0.0/16'), ['10.97.0.0/16 via inet6 fe80::1 dev br-ex']);
      assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4], 'all or none: the other CIDR waits too');
      ns.ip('route replace 10.97.0.0/16 via 172.18.0.1 dev br-ex mtu 1400');
      s = await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged once the route is plain');
      assert.deepEqual(
        [...ns.routes('10.96.0.0/16'), ...ns.routes('10.97.0.0/16')],
        [LOCAL_V4, '10.97.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0'],
      );
    },
  );
});

test('a default route via inet6 on br-ex (BGP unnumbered) does not stop the agent: every pass reads it, and it converges as before', async (t) => {
  if (skipWithoutKernel(t)) return;
  const setup = (ns: Netns) => ns.ip('route add 0.0.0.0/0 via inet6 fe80::1 dev br-ex metric 500');
  await withAgent({ node: { gw0: true, ipv6: true }, mode: 'local', setup }, async ({ ns, agent }) => {
    const s = await waitForStatus(
      agent,
      (s) => s.phase === 'Converged' && s.routes.every((r) => r.inSync),
      'Converged',
    );
    assert.ok(!s.reasonCodes.includes('ReconcileFailed'), s.reasons.join('; '));
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
  });
});

test('garbage, oversized and vanishing mode files keep the last valid mode and change nothing', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'garbage' }, async ({ ns, scratch, agent }) => {
    // Wait for the read itself: a first pass may come before the mode file is read (a file
    // written just before a start is read once left alone for 200 ms; the test helper
    // writes it with an old mtime, but the wait does not count on that).
    let s = await waitForStatus(
      agent,
      (s) => /expected exactly/.test(s.modeSource.error ?? '') && s.lastReconcile !== null,
      'mode error',
    );
    assert.equal(s.desiredMode, null);
    assert.match(s.modeSource.error ?? '', /expected exactly "local" or "shared"/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);

    scratch.writeMode('local');
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
    scratch.writeMode('x'.repeat(70 * 1024));
    s = await waitForStatus(agent, (s) => /larger than 65536 bytes/.test(s.modeSource.error ?? ''), 'oversized');
    assert.equal(s.desiredMode, 'local');
    rmSync(scratch.modeFile);
    s = await waitForStatus(agent, (s) => /does not exist/.test(s.modeSource.error ?? ''), 'vanished');
    assert.equal(s.desiredMode, 'local');
    assert.ok(s.reasons.some((r) => /keeping the last valid desired mode "local"/.test(r)));
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
  });
});

test('follows a ConfigMap volume through atomic ..data swaps', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  const volume = path.join(scratch.dir, 'volume');
  // kubelet's atomic writer: keys link through ..data to a timestamped directory.
  const swapTo = (n: number, mode: string) => {
    const dir = path.join(volume, `..2026_12_02_${n}`);
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'mode'), mode);
    symlinkSync(path.basename(dir), path.join(volume, '..data_tmp'));
    renameSync(path.join(volume, '..data_tmp'), path.join(volume, '..data'));
  };
  mkdirSync(volume);
  swapTo(1, 'shared');
  symlinkSync('..data/mode', path.join(volume, 'mode'));
  ovnkube.start('local', { respawn: true });
  const agent = new AgentProcess(ns, scratch, [
    '--mode-file',
    volume,
    '--service-cidr',
    '10.96.0.0/16',
    '--resync-interval',
    '1h',
  ]);
  try {
    await waitForStatus(agent, (s) => s.desiredMode === 'shared', 'shared from the volume');
    swapTo(2, 'shared');
    swapTo(3, 'local');
    await waitForStatus(agent, (s) => s.desiredMode === 'local' && s.phase === 'Converged', 'local after quick swaps');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
  } finally {
    await agent.stop();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
});

test("an operator's Network manifest is refused, saying why (routingViaHost is 4.10+, where the agent never acts): no mode, nothing changed", async (t) => {
  if (skipWithoutKernel(t)) return;
  const manifest = [
    'apiVersion: operator.openshift.io/v1',
    'kind: Network',
    'metadata:',
    '  name: cluster',
    'spec:',
    '  defaultNetwork:',
    '    type: OVNKubernetes',
    '    ovnKubernetesConfig:',
    '      gatewayConfig:',
    '        routingViaHost: true',
  ].join('\n');
  await withAgent({ mode: manifest }, async ({ ns, agent }) => {
    const s = await waitForStatus(
      agent,
      (s) => s.lastReconcile !== null && s.modeSource.error !== null && s.modeSource.error !== 'not read yet',
      'the refusal',
    );
    assert.match(
      s.modeSource.error!,
      /^a Network manifest is not read: .*routingViaHost exists only from OpenShift 4\.10, where the agent never acts; on 4\.8\/4\.9 the mode is the ConfigMap gateway-mode-config/,
    );
    assert.deepEqual([s.desiredMode, s.reasonCodes[0]], [null, 'ModeNotRead']);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
  });
});

test('a ConfigMap volume holding "local\\n" (kubectl create configmap --from-file) is shared, as the cluster network operator reads it: in sync beside a shared ovnkube-node, nothing changed; exactly "local" is local', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch, ovnkube, startAgent }) => {
    const volume = new ConfigMapVolume(path.join(scratch.dir, 'gateway-mode-config'));
    volume.update({ mode: 'local\n' });
    // What CNO rolled out for that ConfigMap: a shared-mode ovnkube-node.
    ovnkube.start('shared', { respawn: true });
    const agent = startAgent(['--mode-file', volume.dir, '--service-cidr', '10.96.0.0/16', '--mtu', '1400']);
    const s = await waitForStatus(
      agent,
      (s) => s.phase === 'Converged' && s.desiredMode === 'shared',
      'shared, Converged',
    );
    assert.deepEqual(s.modeSource, {
      path: volume.dir,
      error: null,
      detail: '"local\\n" is not exactly "local": shared, as the cluster network operator reads it',
    });
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
    assert.equal(ovnkube.starts, 1, 'no restart');
    // The agent logs why (pino writes asynchronously: the line may follow the status).
    await waitForStatus(
      agent,
      () =>
        agent
          .logs()
          .some(
            (l) =>
              l.msg === 'desired mode read as the cluster network operator reads it' &&
              /is not exactly "local"/.test(String(l.detail)),
          ),
      'the log line saying why',
    );

    volume.update({ mode: 'local' });
    const l = await waitForStatus(
      agent,
      (s) => s.desiredMode === 'local' && s.lastReconcile !== null && s.reasonCodes.includes('OvnkubeOtherMode'),
      'local, waiting for the rollout',
    );
    assert.equal(l.modeSource.detail, null);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4], 'nothing moved before ovnkube-node runs local');
  });
});

test('repairs drift at once, and never touches other prefix lengths or tables', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent(
    { mode: 'local', args: ['--service-cidr', '10.96.0.0/16', '--resync-interval', '1h'] },
    async ({ ns, agent }) => {
      ns.ip('route add 10.96.0.0/24 via 172.18.0.1 dev br-ex mtu 1400');
      ns.ip('route add 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400 table 100');
      await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
      ns.ip('route replace 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400');
      // The resync interval is an hour: only the netlink event can bring the repair.
      await waitForStatus(
        agent,
        () =>
          ns.routes('10.96.0.0/16')[0] === LOCAL_V4 &&
          agent.logs().filter((l) => String(l.msg).startsWith('replaced route')).length === 2,
        'repair',
      );
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
      assert.deepEqual(ns.routes('10.96.0.0/24'), ['10.96.0.0/24 via 172.18.0.1 dev br-ex mtu 1400']);
      assert.deepEqual(ns.ip('route show table 100').trim().split('\n'), [
        '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400',
      ]);
    },
  );
});

test('dry run plans and reports but never changes the kernel', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local', args: ['--service-cidr', '10.96.0.0/16', '--dry-run'] }, async ({ ns, agent }) => {
    const s = await waitForStatus(agent, (s) => s.lastReconcile !== null && s.desiredMode === 'local', 'a pass');
    assert.equal(s.dryRun, true);
    assert.ok(s.reasons.some((r) => /dry run: 1 replace\(s\) planned/.test(r)));
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
  });
});

test('a second agent on a live socket is refused; a stale socket is replaced', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ ns, scratch, agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
    const second = new AgentProcess(ns, scratch, ['--service-cidr', '10.96.0.0/16']);
    assert.equal(await second.exited, 1);
    assert.match(second.output, /another agent \(pid \d+\) holds .*\/lock; not starting a second agent/);
    assert.equal(status(scratch.socket)?.phase, 'Converged');

    agent.child.kill('SIGKILL');
    await agent.exited;
    const third = new AgentProcess(ns, scratch, ['--service-cidr', '10.96.0.0/16']);
    try {
      await waitForStatus(third, (s) => s.phase === 'Converged', 'Converged after a stale socket');
    } finally {
      await third.stop();
    }
  });
});

test('status --brief, --json and the exit codes', async (t) => {
  if (skipWithoutKernel(t)) return;
  // Converged, the agent looks at ovnkube-node at the periodic resync only: the shortest one (1 s).
  const args = ['--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--resync-interval', '1'];
  await withAgent({ mode: 'local', args }, async ({ ns, scratch, ovnkube, agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
    const brief = cli(ns, ['status', '--socket', scratch.socket, '--brief']);
    assert.equal(brief.code, 0);
    assert.match(
      brief.stdout,
      /^Converged desired=local ovnkube=local layout=legacy release=4\.8-4\.9 routes=1\/1 in sync/,
    );
    const json = cli(ns, ['status', '--socket', scratch.socket, '--json']);
    assert.equal(JSON.parse(json.stdout).phase, 'Converged');
    ovnkube.stop();
    await waitForStatus(agent, (s) => s.phase === 'Waiting', 'Waiting');
    const human = cli(ns, ['status', '--socket', scratch.socket]);
    assert.equal(human.code, 1);
    assert.match(human.stdout, /no ovnkube --init-node process/);
    assert.equal(cli(ns, ['health', '--socket', scratch.socket]).code, 0);
    assert.equal(cli(ns, ['health', '--ready', '--socket', scratch.socket]).code, 0);
    const gone = cli(ns, ['status', '--socket', path.join(scratch.dir, 'nowhere.sock')]);
    assert.equal(gone.code, 2);
    assert.match(gone.stderr, /is the agent running\?\n$/);
  });
});

test('--ovnkube-mode-check off, no CAP_SYS_PTRACE: an ovnkube-node running shared holds the agent (OvnkubeOtherMode) and the restart an apply left owed; it is never stopped', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ gw0: true }, async ({ ns, scratch, ovnkube }) => {
    scratch.writeMode('local');
    const args = ['--service-cidr', '10.96.0.0/16', '--ovnkube-mode-check', 'off'];
    // A migration journaled with its restart owed, made while no ovnkube-node ran.
    const applied = cli(ns, ['apply', '--mode-file', scratch.modeFile, ...args, '--state-dir', scratch.stateDir]);
    assert.equal(applied.code, 0, applied.stdout + applied.stderr);
    ovnkube.start('shared', { respawn: true });
    const held = new AgentProcess(ns, scratch, [...args, '--mtu', '1400'], {}, CLI, DROP_PTRACE);
    try {
      const s = await waitForStatus(
        held,
        (s) => s.lastReconcile !== null && s.reasonCodes.includes('OvnkubeOtherMode'),
        'Waiting on ovnkube-node',
      );
      assert.equal(s.phase, 'Waiting', JSON.stringify(s));
      assert.match(s.reasons.join('\n'), /cannot read the network namespace of ovnkube pid/);
      assert.deepEqual(
        s.reasonCodes.filter((c) => c.startsWith('Restart')),
        ['RestartHeld'],
        JSON.stringify(s),
      );
      assert.equal(ovnkube.starts, 1, 'ovnkube-node never stopped');
    } finally {
      await held.stop();
    }
  });
});

test('plan and apply run once without the daemon', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  try {
    scratch.writeMode('local');
    const args = ['--mode-file', scratch.modeFile, '--service-cidr', '10.96.0.0/16', '--ovnkube-mode-check', 'off'];
    const planned = cli(ns, ['plan', ...args]);
    assert.equal(planned.code, 1);
    assert.match(
      planned.stdout,
      /replace 10\.96\.0\.0\/16: via 172\.18\.0\.1 dev br-ex mtu 1400 -> via 10\.244\.1\.1 dev ovn-k8s-mp0/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
    // Its own state directory: apply journals its migration there (the default is the host's).
    const applied = cli(ns, ['apply', ...args, '--state-dir', scratch.stateDir]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(applied.stdout, /applied: 1 replace/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
    assert.equal(cli(ns, ['plan', ...args]).code, 0);
  } finally {
    ns.destroy();
    scratch.remove();
  }
});

test('a bad flag exits 2 with one line naming it', () => {
  for (const [args, flag] of [
    [['--service-cidr', 'banana'], '--service-cidr'],
    [['--service-cidr', '10.96.0.0/16', '--layout', 'sideways'], '--layout'],
    [['--service-cidr', '10.96.0.0/16', '--mtu', '9'], '--mtu'],
  ] as const) {
    const p = spawnSync(process.execPath, [CLI, 'plan', '--mode-file', '/nonexistent', ...args], { encoding: 'utf8' });
    assert.equal(p.status, 2, p.stderr);
    const lines = p.stderr.trim().split('\n');
    assert.equal(lines.length, 1);
    assert.ok(lines[0]!.startsWith(`ovn-gwmode-agent: ${flag}:`), lines[0]);
  }
  // The same flags from OVN_GWMODE_* variables.
  const env = {
    ...process.env,
    OVN_GWMODE_MODE_FILE: '/nonexistent',
    OVN_GWMODE_SERVICE_CIDR: '10.96.0.0/16',
    OVN_GWMODE_LAYOUT: 'sideways',
  };
  const fromEnv = spawnSync(process.execPath, [CLI, 'plan'], { encoding: 'utf8', env });
  assert.equal(fromEnv.status, 2);
  assert.match(
    fromEnv.stderr,
    /^ovn-gwmode-agent: --layout: "sideways" is not one of auto, legacy, routing-via-host\n$/,
  );
});

test('shared desired, ovnkube-node running shared keeps a service route via ovn-k8s-mp0: its fallback, never moved', async (t) => {
  if (skipWithoutKernel(t)) return;
  const setup = (ns: Netns) => ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0');
  await withAgent(
    { mode: 'shared', ovnkube: 'shared', setup, args: ['--service-cidr', '10.96.0.0/16'] },
    async ({ ns, ovnkube, agent }) => {
      const s = await waitForStatus(
        agent,
        (s) => s.phase === 'Converged' && s.desiredMode === 'shared',
        'shared Converged',
      );
      assert.deepEqual([s.reasonCodes[0], s.routes[0]?.inSync], ['OvnkubeFallbackRoute', false]);
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
      assert.deepEqual([s.restart?.count, ovnkube.starts], [0, 1]);
    },
  );
});

test('--layout legacy never turns the 4.10+ protection off: a route via 169.254.0.4 stays', async (t) => {
  if (skipWithoutKernel(t)) return;
  const setup = (ns: Netns) => {
    ns.ip('addr add 169.254.0.2/17 dev br-ex');
    ns.ip('route replace 10.96.0.0/16 via 169.254.0.4 dev br-ex mtu 1400');
  };
  await withAgent(
    { mode: 'local', setup, args: ['--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--layout', 'legacy'] },
    async ({ ns, agent }) => {
      const s = await waitForStatus(
        agent,
        (s) => s.layout === 'routing-via-host' && s.phase === 'Converged',
        'routing-via-host',
      );
      assert.equal(s.reasonCodes[0], 'RoutingViaHostLayout');
      assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 169.254.0.4 dev br-ex mtu 1400']);
    },
  );
});

test('a second address on ovn-k8s-mp0: the next hop would be a guess, so the agent waits', async (t) => {
  if (skipWithoutKernel(t)) return;
  const setup = (ns: Netns) => ns.ip('addr add 10.244.9.2/24 dev ovn-k8s-mp0');
  await withAgent({ mode: 'local', setup }, async ({ ns, agent }) => {
    const s = await waitForStatus(
      agent,
      (s) => s.reasonCodes.includes('ManagementAddressUnusable'),
      'ManagementAddressUnusable',
    );
    assert.equal(s.phase, 'Waiting');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4]);
  });
});
