// The faithful ovnkube-node stand-in does what each release's ovnkube-node does to the
// service route (test/fixtures/ovnkube-standin.sh names the sources), and looks to /proc
// as ovnkube-node does. The matrix (matrix.test.ts) judges the agent with it.
import { strict as assert } from 'node:assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseOvnkubeCmdline } from '../../src/ovnkube/proc.js';
import { seedNode, skipWithoutKernel, type Netns } from '../helpers/netns.js';
import { ovnkubeArgv, type Release } from '../helpers/ovnkube-releases.js';
import { StandinOvnkube, standinBinary, type StandinOptions } from '../helpers/ovnkube-standin.js';

const SHARED = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';
const LOCAL = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';
const MASQUERADE = '10.96.0.0/16 via 169.254.169.4 dev br-ex mtu 1400';
const MISSING = 'missing route entry for subnet 10.96.0.0/16 via gateway 10.244.1.1 on link ovn-k8s-mp0';

/** A seed node (shared-mode route, or `local`: the mp0 route and a gw0) and a stand-in of `release`. */
async function withStandin(
  release: Release,
  opts: StandinOptions & { seed?: 'shared' | 'local' },
  fn: (ns: Netns, standin: StandinOvnkube) => Promise<void>,
): Promise<void> {
  const ns = seedNode({ gw0: opts.seed === 'local' });
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-standin-test-'));
  const standin = new StandinOvnkube(ns, dir, release, opts);
  try {
    if (opts.seed === 'local') ns.ip(`route replace ${LOCAL}`);
    await fn(ns, standin);
  } finally {
    standin.stop();
    ns.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

test("is a process named ovnkube whose argv is CNO's, word for word, and which the agent's /proc scan reads", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withStandin('4.9', {}, async (_ns, standin) => {
    standin.start('local');
    await standin.ready();
    const pid = standin.pid!;
    // `ip netns exec` execs the stand-in in place: the spawned PID is ovnkube's.
    assert.equal(readFileSync(`/proc/${pid}/comm`, 'utf8'), 'ovnkube\n');
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
    assert.deepEqual(argv, ovnkubeArgv('4.9', 'local', standinBinary()));
    assert.deepEqual(parseOvnkubeCmdline(argv), { modeFlag: 'local', release410Plus: null });
    assert.deepEqual(parseOvnkubeCmdline(ovnkubeArgv('4.10', 'local')), {
      modeFlag: 'local',
      release410Plus: '--export-ovs-metrics',
    });
  });
});

test('4.8 and 4.9 local mode after shared: the br-ex route stays, the add fails with EEXIST at start and at every health check (the bug)', async (t) => {
  if (skipWithoutKernel(t)) return;
  for (const release of ['4.8', '4.9'] as const) {
    await withStandin(release, { healthPeriod: 0.2 }, async (ns, standin) => {
      standin.start('local');
      await standin.ready();
      while (count(standin.log(), MISSING) < 3) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED], release);
      assert.match(
        standin.log(),
        /Ignoring error RTNETLINK answers: File exists from 'route add 10\.96\.0\.0\/16 via 10\.244\.1\.1'/,
      );
      // br-local and ovn-k8s-gw0 169.254.0.1/20: local mode's node access bridge.
      assert.match(ns.ip('-4 addr show dev ovn-k8s-gw0'), /inet 169\.254\.0\.1\/20 /);
      assert.match(ns.ip('link show ovn-k8s-gw0'), /master br-local/);
    });
  }
});

test('the fixed z-streams (PR 916 for 4.8, PR 892 for 4.9) put the route on mp0 at start, and only at start', async (t) => {
  if (skipWithoutKernel(t)) return;
  for (const release of ['4.8-fixed', '4.9-fixed'] as const) {
    await withStandin(release, { healthPeriod: 0.2 }, async (ns, standin) => {
      standin.start('local');
      await standin.ready();
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL], release);
      // The health check only adds what is missing: a br-ex route put back later stays.
      ns.ip(`route replace ${SHARED}`);
      const seen = count(standin.log(), MISSING);
      while (count(standin.log(), MISSING) < seen + 2) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED], release);
    });
  }
});

test('4.8/4.9 restarted in shared mode flush their mp0 routes and add the br-ex one: local -> shared heals itself', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withStandin('4.9', { seed: 'local' }, async (ns, standin) => {
    standin.start('local');
    await standin.ready();
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    standin.start('shared');
    await standin.ready(2);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED]);
  });
});

test('the health check puts back a missing mp0 route in 4.8/4.9 local mode', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withStandin('4.8', { seed: 'local', healthPeriod: 0.2 }, async (ns, standin) => {
    standin.start('local');
    await standin.ready();
    ns.ip(`route del ${LOCAL}`);
    while (ns.routes('10.96.0.0/16').length === 0) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
  });
});

test('4.10 and 4.11 route services via the default gateway on br-ex in both modes, flush the old mp0 route, and leave a leftover gw0', async (t) => {
  if (skipWithoutKernel(t)) return;
  for (const release of ['4.10', '4.11'] as const) {
    for (const mode of ['local', 'shared'] as const) {
      await withStandin(release, { seed: 'local' }, async (ns, standin) => {
        standin.start(mode);
        await standin.ready();
        assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED], `${release} ${mode}`);
        assert.match(ns.ip('-4 addr show dev ovn-k8s-gw0'), /169\.254\.0\.1\/20/, 'the 4.9 leftover stays');
        assert.match(ns.ip('-4 route show 169.254.169.3'), /via 10\.244\.1\.1 dev ovn-k8s-mp0/);
      });
    }
  }
});

test('4.12 routes services via the masquerade next hop 169.254.169.4 in both modes, replacing a 4.11 route', async (t) => {
  if (skipWithoutKernel(t)) return;
  for (const mode of ['local', 'shared'] as const) {
    await withStandin('4.12', {}, async (ns, standin) => {
      standin.start(mode);
      await standin.ready();
      assert.deepEqual(ns.routes('10.96.0.0/16'), [MASQUERADE], mode);
      assert.match(ns.ip('-4 addr show dev br-ex'), /inet 169\.254\.169\.2\/29 /);
    });
  }
});

test('in an upgrade window ovnkube-node routes services via mp0: 4.8/4.9 in shared mode, 4.10+ in both modes', async (t) => {
  if (skipWithoutKernel(t)) return;
  const cases: Array<[Release, 'local' | 'shared']> = [
    ['4.8', 'shared'],
    ['4.10', 'local'],
    ['4.10', 'shared'],
  ];
  for (const [release, mode] of cases) {
    await withStandin(release, { seed: 'local', topology: 'old' }, async (ns, standin) => {
      standin.start(mode);
      await standin.ready();
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL], `${release} ${mode}`);
      assert.match(standin.log(), /System may be upgrading, falling back to to legacy K8S Service via mp0/);
    });
  }
});

test('SIGTERM ends it at once with status 0, and with respawn a new one starts (kubelet)', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withStandin('4.9', {}, async (_ns, standin) => {
    standin.start('shared', { respawn: true });
    await standin.ready();
    process.kill(standin.pid!, 'SIGTERM');
    await standin.ready(2);
    assert.deepEqual(standin.exits, [0]);
    assert.equal(standin.starts, 2);
  });
});
