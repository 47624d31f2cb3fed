// The rtnetlink dataplane against the real kernel, in throwaway namespaces.
import { strict as assert } from 'node:assert';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { seedNode, skipWithoutKernel, type Netns } from '../helpers/netns.js';
import { Probe, ProbeError } from '../helpers/probe-client.js';
import type { Link } from '../../src/core/route.js';

/** A route as the probe returns it (flattened). */
type KernelRoute = { prefix: string; family: number; table: number; gateway: string | null; oif: number | null; dev: string | null; mtu: number | null; priority: number; protocol: number; scope: number; type: number; multipath: boolean };

const RTPROT_BOOT = 3;
const RT_SCOPE_UNIVERSE = 0;
const RTN_UNICAST = 1;

async function withNode(
  options: Parameters<typeof seedNode>[0],
  fn: (ns: Netns, probe: Probe) => Promise<void>,
  probePrefix: string[] = [],
): Promise<void> {
  const ns = seedNode(options);
  const probe = new Probe(ns, probePrefix);
  try {
    await fn(ns, probe);
  } finally {
    await probe.close();
    ns.destroy();
  }
}

async function linkIndex(probe: Probe, name: string): Promise<number> {
  const link = (await probe.call<Link[]>('links')).find((l) => l.name === name);
  assert.ok(link, `link ${name} exists`);
  return link.index;
}

function replaceSpec(prefix: string, gateway: string, oif: number, mtu: number | null, priority = 0) {
  return { prefix, gateway, oif, mtu, table: 254, priority, protocol: RTPROT_BOOT, scope: RT_SCOPE_UNIVERSE, type: RTN_UNICAST };
}

test("reads the seed node's stale service route back exactly", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (_ns, probe) => {
    const routes = await probe.call<KernelRoute[]>('routesFor', '10.96.0.0/16');
    assert.deepEqual(routes, [
      {
        prefix: '10.96.0.0/16',
        family: 4,
        table: 254,
        gateway: '172.18.0.1',
        oif: await linkIndex(probe, 'br-ex'),
        dev: 'br-ex',
        mtu: 1400,
        priority: 0,
        protocol: RTPROT_BOOT,
        scope: RT_SCOPE_UNIVERSE,
        type: RTN_UNICAST,
        multipath: false,
      },
    ]);
    const links = await probe.call<Link[]>('links');
    assert.deepEqual(
      links.filter((l) => l.name === 'br-ex' || l.name === 'ovn-k8s-mp0').map((l) => [l.name, l.up]),
      [['br-ex', true], ['ovn-k8s-mp0', true]],
    );
    const addresses = await probe.call<Array<{ address: string; prefixLength: number; family: number }>>('addresses');
    assert.ok(addresses.some((a) => a.address === '10.244.1.2' && a.prefixLength === 24 && a.family === 4));
  });
});

test('replaces the IPv4 service route to the management port and back, keeping the MTU only where asked', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
    const brex = await linkIndex(probe, 'br-ex');
    await probe.call('replaceRoute', replaceSpec('10.96.0.0/16', '10.244.1.1', mp0, null));
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0']);
    await probe.call('replaceRoute', replaceSpec('10.96.0.0/16', '172.18.0.1', brex, 1400));
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
  });
});

test('replaces an IPv6 service route to the management port and back', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ ipv6: true }, async (ns, probe) => {
    const before = await probe.call<KernelRoute[]>('routesFor', 'fd00:10:96::/112');
    assert.equal(before.length, 1);
    assert.equal(before[0]?.gateway, 'fd00:172:18::1');
    assert.equal(before[0]?.mtu, 1400);
    const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
    const brex = await linkIndex(probe, 'br-ex');
    const priority = before[0]?.priority ?? 1024;
    await probe.call('replaceRoute', replaceSpec('fd00:10:96::/112', 'fd00:10:244:1::1', mp0, null, priority));
    assert.deepEqual(ns.routes('fd00:10:96::/112'), [
      `fd00:10:96::/112 via fd00:10:244:1::1 dev ovn-k8s-mp0 metric ${priority} pref medium`,
    ]);
    await probe.call('replaceRoute', replaceSpec('fd00:10:96::/112', 'fd00:172:18::1', brex, 1400, priority));
    assert.deepEqual(ns.routes('fd00:10:96::/112'), [
      `fd00:10:96::/112 via fd00:172:18::1 dev br-ex metric ${priority} mtu 1400 pref medium`,
    ]);
  });
});

test('sees only the exact prefix of the main table: not other lengths, not other tables', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    ns.ip('route add 10.96.0.0/24 via 172.18.0.1 dev br-ex');
    ns.ip('route add 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0 table 100');
    ns.ip('route add 10.96.0.0/17 via 172.18.0.1 dev br-ex');
    const routes = await probe.call<KernelRoute[]>('routesFor', '10.96.0.0/16');
    assert.deepEqual(routes.map((r) => [r.prefix, r.table, r.dev]), [['10.96.0.0/16', 254, 'br-ex']]);
    assert.deepEqual(await probe.call('routesFor', '10.97.0.0/16'), []);
  });
});

test('a concurrent reader never sees the service prefix missing while it is replaced', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    const reader = new Probe(ns);
    try {
      const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
      const brex = await linkIndex(probe, 'br-ex');
      const flips = probe.call('flip', 400, replaceSpec('10.96.0.0/16', '10.244.1.1', mp0, null), replaceSpec('10.96.0.0/16', '172.18.0.1', brex, 1400));
      const missing = await reader.call<number>('readLoop', '10.96.0.0/16', 400);
      await flips;
      assert.equal(missing, 0);
    } finally {
      await reader.close();
    }
  });
});

test('delivers events for route changes made with ip route', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    await probe.call('subscribe');
    ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0');
    ns.ip('route add 10.97.0.0/16 via 172.18.0.1 dev br-ex');
    ns.ip('route del 10.97.0.0/16');
    ns.ip('link set ovn-k8s-mp0 down');
    await probe.waitForEvent((e) => e.kind === 'route' && e.op === 'new' && e.prefix === '10.96.0.0/16' && e.table === 254);
    await probe.waitForEvent((e) => e.kind === 'route' && e.op === 'del' && e.prefix === '10.97.0.0/16');
    await probe.waitForEvent(
      (e) => e.kind === 'link' && (e.link as Link).name === 'ovn-k8s-mp0' && (e.link as Link).up === false,
    );
  });
});

test('a storm of 20,000 route changes while the loop is blocked yields lost, not a crash, and the next read is right', async (t) => {
  if (skipWithoutKernel(t)) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-storm-'));
  try {
    await withNode({}, async (ns, probe) => {
      await probe.call('subscribe');
      const flag = path.join(dir, 'unblock');
      const blocked = probe.call('block', flag);
      const adds: string[] = [];
      for (let i = 0; i < 10_000; i++) adds.push(`route add 10.${100 + (i >> 8)}.${i & 255}.0/24 via 172.18.0.1 dev br-ex`);
      ns.batch(adds);
      ns.batch(adds.map((l) => l.replace('route add', 'route del').replace(/ via .*/, '')));
      ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0');
      writeFileSync(flag, '');
      await blocked;
      const lost = await probe.waitForEvent((e) => e.kind === 'lost');
      assert.equal(lost.code, 'ENOBUFS');
      const routes = await probe.call<KernelRoute[]>('routesFor', '10.96.0.0/16');
      assert.deepEqual(routes.map((r) => [r.gateway, r.dev, r.mtu]), [['10.244.1.1', 'ovn-k8s-mp0', null]]);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without CAP_NET_ADMIN a replace fails with EPERM and says what is missing', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode(
    {},
    async (ns, probe) => {
      const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
      await assert.rejects(probe.call('replaceRoute', replaceSpec('10.96.0.0/16', '10.244.1.1', mp0, null)), (err: ProbeError) => {
        assert.equal(err.code, 'EPERM');
        assert.match(err.message, /CAP_NET_ADMIN/);
        return true;
      });
      assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
    },
    ['setpriv', '--bounding-set=-net_admin', '--inh-caps=-net_admin', '--'],
  );
});

test("a replace via an unreachable gateway fails with the kernel's own text and changes nothing", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
    await assert.rejects(probe.call('replaceRoute', replaceSpec('10.96.0.0/16', '192.0.2.1', mp0, null)), (err: ProbeError) => {
      assert.equal(err.code, 'ENETUNREACH');
      assert.equal(err.extAck, 'Nexthop has invalid gateway');
      return true;
    });
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
  });
});
