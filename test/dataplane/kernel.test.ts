// The rtnetlink dataplane against the real kernel, in throwaway namespaces.
import { strict as assert } from 'node:assert';
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { seedNode, skipWithoutKernel, type Netns } from '../helpers/netns.js';
import { Probe, ProbeError, type ProbeEvent, type ProbeOptions } from '../helpers/probe-client.js';
import type { Link, Route, RouteReplace } from '../../src/core/route.js';

const RTPROT_BOOT = 3;
const RT_SCOPE_UNIVERSE = 0;
const RTN_UNICAST = 1;
const SVC4 = '10.96.0.0/16';
const SVC6 = 'fd00:10:96::/112';
const WATCHED = { prefixes: [SVC4, '0.0.0.0/0', SVC6, '::/0'], links: ['br-ex', 'ovn-k8s-mp0'] };

async function withNode(
  options: Parameters<typeof seedNode>[0],
  fn: (ns: Netns, probe: Probe) => Promise<void>,
  probeOptions: ProbeOptions = {},
): Promise<void> {
  const ns = seedNode(options);
  try {
    const probe = new Probe(ns, probeOptions);
    try {
      await fn(ns, probe);
    } finally {
      await probe.close();
    }
  } finally {
    ns.destroy();
  }
}

async function linkIndex(probe: Probe, name: string): Promise<number> {
  const link = (await probe.call<Link[]>('links', [name])).find((l) => l.name === name);
  assert.ok(link, `link ${name} exists`);
  return link.index;
}

async function routesOf(probe: Probe, prefix: string): Promise<Route[]> {
  const all = await probe.call<Record<string, Route[]>>('routes', [prefix]);
  const routes = all[prefix];
  assert.ok(routes, `routes() answers for ${prefix}`);
  return routes;
}

/** [gateway, dev, mtu, metric]: the fields of a route the tests below look at. */
type Hop = [string | null, string | null, number | null, number];

function nextHops(routes: Route[]): Hop[] {
  return routes.map((r) => [r.nextHop.gateway, r.nextHop.dev, r.nextHop.mtu, r.key.priority]);
}

const byMetric = (a: Hop, b: Hop) => a[3] - b[3];

function replaceSpec(
  prefix: string,
  to: { gateway: string; dev: string; oif: number; mtu: number | null },
  priority = 0,
): RouteReplace {
  return {
    key: { prefix, family: prefix.includes(':') ? 6 : 4, table: 254, priority },
    protocol: RTPROT_BOOT,
    scope: RT_SCOPE_UNIVERSE,
    type: RTN_UNICAST,
    to,
  };
}

test("reads the seed node's stale service route back exactly, every field", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (_ns, probe) => {
    assert.deepEqual(await routesOf(probe, SVC4), [
      {
        key: { prefix: SVC4, family: 4, table: 254, priority: 0 },
        nextHop: { dev: 'br-ex', oif: await linkIndex(probe, 'br-ex'), gateway: '172.18.0.1', mtu: 1400 },
        protocol: RTPROT_BOOT,
        scope: RT_SCOPE_UNIVERSE,
        type: RTN_UNICAST,
        tos: 0,
        multipath: false,
        unmodelled: [],
      },
    ]);
    const links = await probe.call<Link[]>('links');
    assert.deepEqual(
      links.filter((l) => l.name === 'br-ex' || l.name === 'ovn-k8s-mp0').map((l) => [l.name, l.up]),
      [
        ['br-ex', true],
        ['ovn-k8s-mp0', true],
      ],
    );
    const addresses = await probe.call<Array<{ address: string; prefixLength: number; family: number }>>('addresses');
    assert.ok(addresses.some((a) => a.address === '10.244.1.2' && a.prefixLength === 24 && a.family === 4));
  });
});

test('a route with what a replace would not carry over (src, onlink, advmss, pref, expires) says so; the shapes ovnkube-node makes have none', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ ipv6: true }, async (ns, probe) => {
    const unmodelled = async (prefix: string) => (await routesOf(probe, prefix)).map((r) => r.unmodelled);
    assert.deepEqual(await unmodelled(SVC4), [[]]);
    assert.deepEqual(await unmodelled('fd00:10:96::/112'), [[]], 'the pref medium every IPv6 route has is not one');
    ns.ip('route replace 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400 src 172.18.0.2');
    assert.deepEqual(await unmodelled(SVC4), [['src 172.18.0.2']]);
    ns.ip('route replace 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400 onlink advmss 1360');
    assert.deepEqual(await unmodelled(SVC4), [['onlink', 'advmss']]);
    ns.ip('-6 route replace fd00:10:96::/112 via fd00:172:18::1 dev br-ex mtu 1400 pref high');
    assert.deepEqual(await unmodelled('fd00:10:96::/112'), [['pref high']]);
    // An expiry: the kernel reports it in RTA_CACHEINFO, never in RTA_EXPIRES (a replace would make the route permanent).
    ns.ip('-6 route replace fd00:10:96::/112 via fd00:172:18::1 dev br-ex mtu 1400 expires 300');
    assert.deepEqual(await unmodelled('fd00:10:96::/112'), [['expires']]);
  });
});

test('links and their addresses are read by name: only those asked for, among a veth per pod; a service route through another device still names it', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    for (let i = 0; i < 40; i++) ns.ip(`link add pod${i} type veth peer name host${i}`);
    const links = await probe.call<Link[]>('links', ['ovn-k8s-mp0', 'host7', 'nosuch', 'br-ex']);
    assert.deepEqual(links.map((l) => l.name).sort(), ['br-ex', 'host7', 'ovn-k8s-mp0']);
    // An alternative name is not a link's name; a name of an odd length (the kernel's answer echoes
    // the unpadded request before its own text) is one that does not exist.
    ns.ip('link property add dev host8 altname wanted0');
    assert.deepEqual(await probe.call<Link[]>('links', ['wanted0', 'éééééé', 'nosuch1']), []);
    ns.ip('addr add 192.0.2.77/24 dev host8');
    const addresses = await probe.call<Array<{ linkIndex: number; address: string }>>('addresses', ['ovn-k8s-mp0']);
    const mp0 = links.find((l) => l.name === 'ovn-k8s-mp0')!.index;
    assert.deepEqual([...new Set(addresses.map((a) => a.linkIndex))], [mp0], 'the addresses of ovn-k8s-mp0 alone');
    assert.ok(addresses.some((a) => a.address === '10.244.1.2'));
    ns.ip('link set host39 up');
    ns.ip('addr add 192.0.2.2/24 dev host39');
    ns.ip(`route replace ${SVC4} via 192.0.2.1 dev host39`);
    assert.deepEqual(
      (await routesOf(probe, SVC4)).map((r) => r.nextHop.dev),
      ['host39'],
    );
  });
});

test('addresses of one family are that family only: an IPv4 node reads no IPv6 address, and the reverse', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    ns.ip('-6 addr add fd00:10:244:1::2/64 dev ovn-k8s-mp0 nodad');
    type Address = { family: number; address: string };
    const read = (families?: number[]) => probe.call<Address[]>('addresses', ['ovn-k8s-mp0'], families);
    const v4 = await read([4]);
    const v6 = await read([6]);
    assert.deepEqual(
      v4.map((a) => a.address),
      ['10.244.1.2'],
    );
    assert.ok(v6.length > 0 && v6.every((a) => a.family === 6), JSON.stringify(v6));
    assert.ok(v6.some((a) => a.address === 'fd00:10:244:1::2'));
    assert.deepEqual((await read()).map((a) => a.address).sort(), [...v4, ...v6].map((a) => a.address).sort());
  });
});

test('links carry their MTU (IFLA_MTU)', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    ns.ip('link set br-ex mtu 1450');
    const links = await probe.call<Link[]>('links');
    assert.equal(links.find((l) => l.name === 'br-ex')?.mtu, 1450);
    assert.equal(links.find((l) => l.name === 'ovn-k8s-mp0')?.mtu, 1400, 'the seed gives mp0 the cluster MTU');
  });
});

test('IPv6 addresses say whether duplicate address detection is still running or failed', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    ns.ip('link add dad0 type veth peer name dad1');
    ns.sysctl('net.ipv6.conf.dad0.accept_dad', '1');
    // On a link that is down, DAD cannot run: the address stays tentative.
    ns.ip('addr add fd00:99::1/64 dev dad0');
    // The peer already holds fd00:99::5, and answers dad0's probe for it: DAD fails.
    ns.ip('link set dad1 up');
    ns.ip('addr add fd00:99::5/64 dev dad1 nodad');
    ns.ip('addr add fd00:99::5/64 dev dad0');
    ns.ip('link set dad0 up');
    ns.ip('addr add fd00:99::7/64 dev dad0');
    const deadline = Date.now() + 10_000;
    let mine: Array<{ address: string; tentative: boolean; dadFailed: boolean }> = [];
    const dad0 = await linkIndex(probe, 'dad0');
    for (;;) {
      const all = await probe.call<
        Array<{ linkIndex: number; address: string; tentative: boolean; dadFailed: boolean }>
      >('addresses', ['dad0']);
      mine = all.filter((a) => a.linkIndex === dad0 && a.address.startsWith('fd00:99:'));
      if (mine.some((a) => a.dadFailed) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const byAddress = new Map(mine.map((a) => [a.address, [a.tentative, a.dadFailed]]));
    assert.deepEqual(byAddress.get('fd00:99::5'), [true, true], 'a duplicate is tentative and dadfailed');
    assert.equal(byAddress.get('fd00:99::1')?.[1], false);
    const fresh = byAddress.get('fd00:99::7');
    assert.ok(fresh, 'fd00:99::7 is listed');
    assert.equal(fresh[1], false, 'fd00:99::7 did not fail DAD');
  });
});

test('a route with a TOS selector reports it', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    ns.ip('route add 10.96.0.0/16 tos 0x10 via 172.18.0.1 dev br-ex');
    const routes = await routesOf(probe, SVC4);
    assert.deepEqual(routes.map((r) => r.tos).sort(), [0, 16]);
  });
});

test('replaces the IPv4 service route to the management port and back, keeping the MTU only where asked', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
    const brex = await linkIndex(probe, 'br-ex');
    await probe.call(
      'replaceRoute',
      replaceSpec(SVC4, { gateway: '10.244.1.1', dev: 'ovn-k8s-mp0', oif: mp0, mtu: null }),
    );
    assert.deepEqual(ns.routes(SVC4), ['10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0']);
    await probe.call('replaceRoute', replaceSpec(SVC4, { gateway: '172.18.0.1', dev: 'br-ex', oif: brex, mtu: 1400 }));
    assert.deepEqual(ns.routes(SVC4), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
  });
});

test('replaces an IPv6 service route to the management port and back', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ ipv6: true }, async (ns, probe) => {
    const before = await routesOf(probe, SVC6);
    assert.deepEqual(nextHops(before), [['fd00:172:18::1', 'br-ex', 1400, 1024]]);
    const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
    const brex = await linkIndex(probe, 'br-ex');
    await probe.call(
      'replaceRoute',
      replaceSpec(SVC6, { gateway: 'fd00:10:244:1::1', dev: 'ovn-k8s-mp0', oif: mp0, mtu: null }, 1024),
    );
    assert.deepEqual(ns.routes(SVC6), [`${SVC6} via fd00:10:244:1::1 dev ovn-k8s-mp0 metric 1024 pref medium`]);
    await probe.call(
      'replaceRoute',
      replaceSpec(SVC6, { gateway: 'fd00:172:18::1', dev: 'br-ex', oif: brex, mtu: 1400 }, 1024),
    );
    assert.deepEqual(ns.routes(SVC6), [`${SVC6} via fd00:172:18::1 dev br-ex metric 1024 mtu 1400 pref medium`]);
  });
});

for (const family of [4, 6] as const) {
  const prefix = family === 4 ? SVC4 : SVC6;
  const gateway = family === 4 ? '10.244.1.1' : 'fd00:10:244:1::1';
  const stale = family === 4 ? 'via 172.18.0.1 dev br-ex' : 'via fd00:172:18::1 dev br-ex';
  const metric = family === 4 ? 0 : 1024;

  test(`IPv${family}: replacing a route that was deleted fails with ENOENT and creates nothing`, async (t) => {
    if (skipWithoutKernel(t)) return;
    await withNode({ ipv6: true }, async (ns, probe) => {
      const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
      ns.ip(`-${family} route del ${prefix}`);
      await assert.rejects(
        probe.call('replaceRoute', replaceSpec(prefix, { gateway, dev: 'ovn-k8s-mp0', oif: mp0, mtu: null }, metric)),
        (err: ProbeError) => err.code === 'ENOENT',
      );
      assert.deepEqual(ns.routes(prefix), []);
    });
  });

  test(`IPv${family}: replacing with a metric the route no longer has fails with ENOENT and adds no second route`, async (t) => {
    if (skipWithoutKernel(t)) return;
    await withNode({ ipv6: true }, async (ns, probe) => {
      const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
      const [observed] = await routesOf(probe, prefix);
      assert.ok(observed);
      // Someone moves the route to metric 50 after the agent read it.
      ns.ip(`-${family} route del ${prefix}`);
      ns.ip(`-${family} route add ${prefix} ${stale} metric 50`);
      await assert.rejects(
        probe.call(
          'replaceRoute',
          replaceSpec(prefix, { gateway, dev: 'ovn-k8s-mp0', oif: mp0, mtu: null }, observed.key.priority),
        ),
        (err: ProbeError) => err.code === 'ENOENT',
      );
      assert.deepEqual(
        ns.routes(prefix).map((l) => l.replace(/ pref medium$/, '')),
        [`${prefix} ${stale} metric 50`],
      );
    });
  });

  for (const subscribed of [false, true]) {
    test(`IPv${family}: a second route of the prefix with another metric is reported (${subscribed ? 'subscribed' : 'one-shot'})`, async (t) => {
      if (skipWithoutKernel(t)) return;
      await withNode({ ipv6: true }, async (ns, probe) => {
        if (subscribed) {
          await probe.call('subscribe', WATCHED);
          await routesOf(probe, prefix);
        }
        ns.ip(`-${family} route add ${prefix} via ${gateway} dev ovn-k8s-mp0 metric 100`);
        const routes = await routesOf(probe, prefix);
        const expected: Hop[] = [
          [family === 4 ? '172.18.0.1' : 'fd00:172:18::1', 'br-ex', 1400, metric],
          [gateway, 'ovn-k8s-mp0', null, 100],
        ];
        assert.deepEqual(nextHops(routes).sort(byMetric), expected.sort(byMetric));
      });
    });
  }
}

test('sees only the exact prefix of the main table: not other lengths, not other tables', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ ipv6: true }, async (ns, probe) => {
    ns.ip('route add 10.96.0.0/24 via 172.18.0.1 dev br-ex');
    ns.ip('route add 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0 table 100');
    // Table 1000 is told apart only by RTA_TABLE: the header's 8-bit field says 252 (RT_TABLE_COMPAT).
    ns.ip('route add 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0 table 1000');
    ns.ip('route add 10.96.0.0/17 via 172.18.0.1 dev br-ex');
    ns.ip('-6 route add fd00:10:96::/120 via fd00:172:18::1 dev br-ex');
    ns.ip('-6 route add fd00:10:96::/112 via fd00:172:18::1 dev br-ex table 1000');
    // 2,000 unrelated routes: a dump of several datagrams.
    ns.batch(
      Array.from({ length: 2000 }, (_, i) => `route add 100.64.${i >> 8}.${i & 255}/32 via 172.18.0.1 dev br-ex`),
    );
    const routes = await routesOf(probe, SVC4);
    assert.deepEqual(
      routes.map((r) => [r.key.prefix, r.key.table, r.nextHop.dev]),
      [[SVC4, 254, 'br-ex']],
    );
    assert.deepEqual(await routesOf(probe, '10.97.0.0/16'), []);
    assert.deepEqual(
      (await routesOf(probe, SVC6)).map((r) => [r.key.prefix, r.key.table, r.nextHop.dev]),
      [[SVC6, 254, 'br-ex']],
    );
  });
});

test('a subscribed reader sees its own replaces and outside changes at once', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ ipv6: true }, async (ns, probe) => {
    await probe.call('subscribe', WATCHED);
    await probe.call('routes', WATCHED.prefixes);
    const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
    await probe.call(
      'replaceRoute',
      replaceSpec(SVC4, { gateway: '10.244.1.1', dev: 'ovn-k8s-mp0', oif: mp0, mtu: null }),
    );
    assert.deepEqual(nextHops(await routesOf(probe, SVC4)), [['10.244.1.1', 'ovn-k8s-mp0', null, 0]]);
    ns.ip('-6 route replace fd00:10:96::/112 via fd00:10:244:1::1 dev ovn-k8s-mp0');
    assert.deepEqual(nextHops(await routesOf(probe, SVC6)), [['fd00:10:244:1::1', 'ovn-k8s-mp0', null, 1024]]);
    ns.ip('route del default');
    assert.deepEqual(await routesOf(probe, '0.0.0.0/0'), []);
  });
});

test('routes the kernel flushes silently (IPv4, link down) are reported as route events, and gone from the next read', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0');
    await probe.call('subscribe', WATCHED);
    assert.equal((await routesOf(probe, SVC4)).length, 1);
    const from = probe.events.length;
    // No RTM_DELROUTE comes for this: the kernel drops IPv4 routes of a link that goes down.
    ns.ip('link set ovn-k8s-mp0 down');
    await probe.waitForEvent((e) => e.kind === 'route' && e.op === 'del' && e.prefix === SVC4, from);
    assert.deepEqual(await routesOf(probe, SVC4), []);
  });
});

test('IPv4 routes through a deleted nexthop object, flushed silently, are reported and gone too', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    ns.ip('nexthop add id 7 via 10.244.1.1 dev ovn-k8s-mp0');
    ns.ip('route replace 10.96.0.0/16 nhid 7');
    await probe.call('subscribe', WATCHED);
    assert.deepEqual(nextHops(await routesOf(probe, SVC4)), [['10.244.1.1', 'ovn-k8s-mp0', null, 0]]);
    const from = probe.events.length;
    ns.ip('nexthop del id 7');
    await probe.waitForEvent((e) => e.kind === 'route' && e.op === 'del' && e.prefix === SVC4, from);
    assert.deepEqual(await routesOf(probe, SVC4), []);
  });
});

test('a watched link renamed away is still reported, by its index', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    // Down before the subscription, so the rename (only possible while down) is the
    // first event about the link, and only the read of the link by name told the index.
    ns.ip('link set ovn-k8s-mp0 down');
    await probe.call('subscribe', WATCHED);
    await probe.call('links');
    ns.ip('link set ovn-k8s-mp0 name mp0-renamed');
    await probe.waitForEvent((e) => e.kind === 'link' && (e.link as Link).name === 'mp0-renamed');
  });
});

test('IPv6 multipath: an appended next hop and a deleted sibling are both seen by the subscribed reader', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({ ipv6: true }, async (ns, probe) => {
    await probe.call('subscribe', WATCHED);
    await routesOf(probe, SVC6);
    ns.ip(`-6 route append ${SVC6} via fd00:10:244:1::1 dev ovn-k8s-mp0`);
    const both = await routesOf(probe, SVC6);
    assert.deepEqual(
      both.map((r) => [r.multipath, r.nextHop.dev]),
      [[true, null]],
    );
    ns.ip(`-6 route del ${SVC6} via fd00:172:18::1 dev br-ex`);
    assert.deepEqual(nextHops(await routesOf(probe, SVC6)), [['fd00:10:244:1::1', 'ovn-k8s-mp0', null, 1024]]);
  });
});

test('a concurrent reader never sees the service prefix missing while it is replaced', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    const reader = new Probe(ns);
    try {
      const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
      const brex = await linkIndex(probe, 'br-ex');
      const flips = probe.call(
        'flip',
        400,
        replaceSpec(SVC4, { gateway: '10.244.1.1', dev: 'ovn-k8s-mp0', oif: mp0, mtu: null }),
        replaceSpec(SVC4, { gateway: '172.18.0.1', dev: 'br-ex', oif: brex, mtu: 1400 }),
      );
      const missing = await reader.call<number>('readLoop', SVC4, 400);
      await flips;
      assert.equal(missing, 0);
    } finally {
      await reader.close();
    }
  });
});

test('delivers events for the watched prefixes and links, and every address; nothing else', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    await probe.call('subscribe', WATCHED);
    ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0');
    ns.ip('route add 10.97.0.0/16 via 172.18.0.1 dev br-ex');
    ns.ip('route del 10.97.0.0/16');
    ns.ip('route add 10.96.0.0/16 via 172.18.0.1 dev br-ex table 100');
    ns.ip('route add 10.96.0.0/16 via 172.18.0.1 dev br-ex table 1000');
    ns.ip('route del 10.96.0.0/16 table 1000');
    ns.ip('link add other0 type veth peer name other1');
    ns.ip('addr add 192.0.2.1/24 dev other0');
    ns.ip('link set ovn-k8s-mp0 down');
    await probe.waitForEvent((e) => e.kind === 'route' && e.op === 'new' && e.prefix === SVC4 && e.table === 254);
    await probe.waitForEvent((e) => e.kind === 'address' && (e.address as { address: string }).address === '192.0.2.1');
    await probe.waitForEvent(
      (e) => e.kind === 'link' && (e.link as Link).name === 'ovn-k8s-mp0' && (e.link as Link).up === false,
    );
    const unwanted = (e: ProbeEvent) =>
      (e.kind === 'route' && (e.prefix !== SVC4 || e.table !== 254)) ||
      (e.kind === 'link' && !WATCHED.links.includes((e.link as Link).name));
    assert.deepEqual(probe.events.filter(unwanted), []);
  });
});

test('a storm of 20,000 changes of a watched route while the loop is blocked yields lost, not a crash; the next read is right and events still flow', async (t) => {
  if (skipWithoutKernel(t)) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-storm-'));
  try {
    await withNode({}, async (ns, probe) => {
      await probe.call('subscribe', WATCHED);
      await routesOf(probe, SVC4);
      const flag = path.join(dir, 'unblock');
      const blocked = probe.call('block', flag);
      const flaps: string[] = [];
      for (let i = 0; i < 10_000; i++) {
        flaps.push(
          'route replace 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400',
          'route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0',
        );
      }
      ns.batch(flaps);
      writeFileSync(flag, '');
      await blocked;
      const lost = await probe.waitForEvent((e) => e.kind === 'lost');
      assert.equal(lost.code, 'ENOBUFS');
      assert.deepEqual(nextHops(await routesOf(probe, SVC4)), [['10.244.1.1', 'ovn-k8s-mp0', null, 0]]);
      // After the overflow the socket is still polled: an outside change is still seen.
      const from = probe.events.length;
      ns.ip('route replace 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400');
      await probe.waitForEvent((e) => e.kind === 'route' && e.op === 'new' && e.prefix === SVC4, from);
      assert.deepEqual(nextHops(await routesOf(probe, SVC4)), [['172.18.0.1', 'br-ex', 1400, 0]]);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a churn of 20,000 changes of other routes while the loop is blocked: the watched change after them still wakes the reader (its event, or lost if the buffer overflowed), and the next read is right', async (t) => {
  if (skipWithoutKernel(t)) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-churn-'));
  try {
    await withNode({}, async (ns, probe) => {
      await probe.call('subscribe', WATCHED);
      await routesOf(probe, SVC4);
      const flag = path.join(dir, 'unblock');
      const blocked = probe.call('block', flag);
      // /24s, and /16s as the service CIDR, in the main table; and the service CIDR in another table.
      const adds: string[] = [];
      for (let i = 0; i < 5_000; i++)
        adds.push(`route add 10.${100 + (i >> 8)}.${i & 255}.0/24 via 172.18.0.1 dev br-ex`);
      for (let i = 0; i < 5_000; i++)
        adds.push(`route add ${20 + (i >> 8)}.${i & 255}.0.0/16 via 172.18.0.1 dev br-ex`);
      adds.push('route add 10.96.0.0/16 via 172.18.0.1 dev br-ex table 100');
      ns.batch(adds);
      ns.batch(adds.map((l) => l.replace('route add', 'route del').replace(/ via \S+ dev \S+/, '')));
      ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0');
      writeFileSync(flag, '');
      await blocked;
      await probe.waitForEvent(
        (e) => e.kind === 'lost' || (e.kind === 'route' && e.op === 'new' && e.prefix === SVC4 && e.table === 254),
      );
      assert.deepEqual(nextHops(await routesOf(probe, SVC4)), [['10.244.1.1', 'ovn-k8s-mp0', null, 0]]);
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
      await assert.rejects(
        probe.call(
          'replaceRoute',
          replaceSpec(SVC4, { gateway: '10.244.1.1', dev: 'ovn-k8s-mp0', oif: mp0, mtu: null }),
        ),
        (err: ProbeError) => {
          assert.equal(err.code, 'EPERM');
          assert.match(err.message, /CAP_NET_ADMIN/);
          return true;
        },
      );
      assert.deepEqual(ns.routes(SVC4), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
    },
    { prefix: ['setpriv', '--bounding-set=-net_admin', '--inh-caps=-net_admin', '--'] },
  );
});

test("a replace via an unreachable gateway fails with the kernel's own text and changes nothing", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    const mp0 = await linkIndex(probe, 'ovn-k8s-mp0');
    await assert.rejects(
      probe.call('replaceRoute', replaceSpec(SVC4, { gateway: '192.0.2.1', dev: 'ovn-k8s-mp0', oif: mp0, mtu: null })),
      (err: ProbeError) => {
        assert.equal(err.code, 'ENETUNREACH');
        assert.equal(err.extAck, 'Nexthop has invalid gateway');
        return true;
      },
    );
    assert.deepEqual(ns.routes(SVC4), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
  });
});

test("a dump the kernel rejects under strict checking fails with the kernel's ext-ack text from NLMSG_DONE", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (_ns, probe) => {
    await assert.rejects(probe.call('dumpWithDstLen', 16), (err: ProbeError) => {
      assert.equal(err.code, 'EINVAL');
      // net/ipv4/fib_frontend.c, ip_valid_fib_dump_req()
      assert.equal(err.extAck, 'Invalid values in header for FIB dump request');
      assert.match(err.message, /Invalid values in header for FIB dump request/);
      return true;
    });
  });
});

test('while subscribed, links and addresses read right after any link or address change show it, watched or not', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withNode({}, async (ns, probe) => {
    await probe.call('subscribe', WATCHED);
    const mtuOf = async (name: string) => (await probe.call<Link[]>('links', [name])).find((l) => l.name === name)?.mtu;
    const hasAddress = async (address: string) =>
      (await probe.call<Array<{ address: string }>>('addresses', ['other0'])).some((a) => a.address === address);
    ns.ip('link add other0 type veth peer name other1');
    assert.equal(await mtuOf('other0'), 1500);
    assert.equal(await mtuOf('other0'), 1500);
    for (const mtu of [1400, 1300]) {
      ns.ip(`link set other0 mtu ${mtu}`);
      assert.equal(await mtuOf('other0'), mtu);
      ns.ip(`link set ovn-k8s-mp0 mtu ${mtu}`);
      assert.equal(await mtuOf('ovn-k8s-mp0'), mtu);
    }
    assert.equal(await hasAddress('192.0.2.1'), false);
    ns.ip('addr add 192.0.2.1/24 dev other0');
    assert.equal(await hasAddress('192.0.2.1'), true);
    ns.ip('addr del 192.0.2.1/24 dev other0');
    assert.equal(await hasAddress('192.0.2.1'), false);
  });
});
