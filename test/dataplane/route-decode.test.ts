// Route messages as the kernel sends them: every attribute shape a main-table route can
// carry, made with iproute2 in a namespace and read through one dump, each decoded or
// named in `unmodelled` (so the planner refuses it, NotOurRoute), and the dump never
// failing; then the shapes the kernel sends only in answers to a get, and broken ones,
// built by hand.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import type { Route } from '../../src/core/route.js';
import { AF_INET, AF_INET6, decodeRoute, encodeRoute, parseDatagram, RTM_NEWROUTE } from '../../src/dataplane/codec.js';
import { parseCidr } from '../../src/net/cidr.js';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { Probe } from '../helpers/probe-client.js';

/** [ip commands, the prefix they make a route for, its `unmodelled`, and (when it has one) its gateway]. */
type Shape = [commands: string[], prefix: string, unmodelled: string[], gateway?: string | null];

const SHAPES: Shape[] = [
  // The shapes ovnkube-node makes: nothing unmodelled.
  [[], '10.96.0.0/16', [], '172.18.0.1'],
  [[], 'fd00:10:96::/112', [], 'fd00:172:18::1'],
  // RTA_VIA: a next hop of another family (RFC 5549, BGP unnumbered). Never taken as the gateway.
  [['route add 10.1.0.0/16 via inet6 fe80::1 dev br-ex'], '10.1.0.0/16', ['via inet6 fe80::1'], null],
  [['route add 0.0.0.0/0 via inet6 fe80::1 dev br-ex metric 500'], '0.0.0.0/0', ['via inet6 fe80::1'], null],
  // RTA_MULTIPATH, with an RTA_VIA inside one of its next hops; IPv6 multipath.
  [
    ['route add 10.2.0.0/16 nexthop via 172.18.0.1 dev br-ex nexthop via inet6 fe80::2 dev br-ex'],
    '10.2.0.0/16',
    ['nexthop via inet6 fe80::2'],
    null,
  ],
  [
    ['-6 route add fd00:13::/64 nexthop via fd00:172:18::1 dev br-ex nexthop via fd00:172:18::9 dev br-ex'],
    'fd00:13::/64',
    [],
    null,
  ],
  // RTA_NH_ID: nexthop objects, one and a group, both families.
  [
    ['nexthop add id 1 via 172.18.0.1 dev br-ex', 'route add 10.3.0.0/16 nhid 1'],
    '10.3.0.0/16',
    ['nhid 1'],
    '172.18.0.1',
  ],
  [['nexthop add id 2 group 1', 'route add 10.33.0.0/16 nhid 2'], '10.33.0.0/16', ['nhid 2'], '172.18.0.1'],
  [
    ['-6 nexthop add id 3 via fd00:172:18::1 dev br-ex', '-6 route add fd00:19::/64 nhid 3'],
    'fd00:19::/64',
    ['nhid 3'],
    'fd00:172:18::1',
  ],
  // RTA_ENCAP_TYPE and RTA_ENCAP (ip is built in; mpls, seg6 need modules a test machine may lack).
  [['route add 10.5.0.0/16 encap ip id 100 dst 172.18.0.9 dev br-ex'], '10.5.0.0/16', ['encap ip'], null],
  // RTA_FLOW, RTA_PREFSRC with onlink (rtm_flags), RTA_METRICS with every RTAX iproute2 sets.
  [['route add 10.7.0.0/16 via 172.18.0.1 dev br-ex realm 5'], '10.7.0.0/16', ['realms'], '172.18.0.1'],
  [
    ['route add 10.20.0.0/16 via 172.18.0.1 dev br-ex src 172.18.0.2 onlink'],
    '10.20.0.0/16',
    ['onlink', 'src 172.18.0.2'],
    '172.18.0.1',
  ],
  [
    [
      'route add 10.8.0.0/16 via 172.18.0.1 dev br-ex advmss 1360 window 1000 rtt 10 rttvar 5 ssthresh 10 cwnd 10 reordering 3 hoplimit 64 initcwnd 10 features ecn rto_min 10 initrwnd 10 quickack 1 congctl reno fastopen_no_cookie 1 mtu lock 1400',
    ],
    '10.8.0.0/16',
    [
      'lock',
      'window',
      'rtt',
      'rttvar',
      'ssthresh',
      'cwnd',
      'advmss',
      'reordering',
      'hoplimit',
      'initcwnd',
      'features',
      'rto_min',
      'initrwnd',
      'quickack',
      'congctl',
      'fastopen_no_cookie',
    ],
    '172.18.0.1',
  ],
  // IPv6: a source prefix (RTA_SRC), RTA_PREF, an expiry (RTA_CACHEINFO), a link-local gateway.
  [
    ['-6 route add fd00:7::/64 from fd00:8::/64 via fd00:172:18::1 dev br-ex'],
    'fd00:7::/64',
    ['from (a source prefix)'],
    'fd00:172:18::1',
  ],
  [
    ['-6 route add fd00:20::/64 via fd00:172:18::1 dev br-ex pref high'],
    'fd00:20::/64',
    ['pref high'],
    'fd00:172:18::1',
  ],
  [
    ['-6 route add fd00:21::/64 via fd00:172:18::1 dev br-ex expires 300'],
    'fd00:21::/64',
    ['expires'],
    'fd00:172:18::1',
  ],
  [['-6 route add fd00:14::/64 via inet6 fe80::1 dev br-ex'], 'fd00:14::/64', [], 'fe80::1'],
  // Other types, a TOS, a link route, another protocol: decoded, their fields say it.
  [['route add blackhole 10.9.0.0/16'], '10.9.0.0/16', [], null],
  [['route add 10.10.0.0/16 dev br-ex'], '10.10.0.0/16', [], null],
  [['route add 10.11.0.0/16 via 172.18.0.1 dev br-ex tos 0x10'], '10.11.0.0/16', [], '172.18.0.1'],
  [['route add 10.12.0.0/16 via 172.18.0.1 dev br-ex proto static'], '10.12.0.0/16', [], '172.18.0.1'],
];

test('every attribute shape of a main-table route, in one dump: each decoded, or named in unmodelled; the dump never fails', async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ ipv6: true });
  try {
    // The seed's default route out of the way: the one via inet6 is the shape to read.
    ns.ip('route del default');
    for (const [commands] of SHAPES) for (const c of commands) ns.ip(c);
    const probe = new Probe(ns);
    try {
      const routes = await probe.call<Record<string, Route[]>>(
        'routes',
        SHAPES.map(([, prefix]) => prefix),
      );
      for (const [, prefix, unmodelled, gateway] of SHAPES) {
        const [r, ...more] = routes[prefix] ?? [];
        assert.ok(r && more.length === 0, `${prefix}: one route`);
        assert.deepEqual(r.unmodelled, unmodelled, prefix);
        if (gateway !== undefined) assert.equal(r.nextHop.gateway, gateway, prefix);
      }
      assert.equal(routes['10.9.0.0/16']![0]!.type, 6, 'RTN_BLACKHOLE');
      assert.equal(routes['10.11.0.0/16']![0]!.tos, 0x10);
      assert.equal(routes['10.2.0.0/16']![0]!.multipath, true);
    } finally {
      await probe.close();
    }
  } finally {
    ns.destroy();
  }
});

/** A route message with `extra` attributes ([type, data]) after what encodeRoute writes. */
function withAttributes(
  prefix: string,
  extra: Array<[number, Buffer]>,
  header: Partial<{ flags: number }> = {},
): Buffer {
  const cidr = parseCidr(prefix);
  const datagram = encodeRoute(RTM_NEWROUTE, 0, 1, 0, {
    family: cidr.family === 4 ? AF_INET : AF_INET6,
    dst: cidr.bytes,
    dstLen: cidr.length,
    table: 254,
    tos: 0,
    priority: 0,
    protocol: 3,
    scope: 0,
    type: 1,
    gateway: undefined,
    oif: 2,
    mtu: undefined,
  });
  const payload = Buffer.from(parseDatagram(datagram)[0]!.data);
  if (header.flags !== undefined) payload.writeUInt32LE(header.flags, 8);
  const attrs = extra.map(([type, data]) => {
    const a = Buffer.alloc((4 + data.length + 3) & ~3);
    a.writeUInt16LE(4 + data.length, 0);
    a.writeUInt16LE(type, 2);
    data.copy(a, 4);
    return a;
  });
  return Buffer.concat([payload, ...attrs]);
}

const rtvia = (family: number, address: number[]): Buffer =>
  Buffer.concat([Buffer.from([family, 0]), Buffer.from(address)]);

test('RTA_VIA as the kernel sends it (family, then 4 or 16 bytes): "via inet6 fe80::1", never the gateway; a via of another size is named too', () => {
  const fe80 = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
  const v6 = decodeRoute(withAttributes('10.96.0.0/16', [[18, rtvia(AF_INET6, fe80)]]));
  assert.deepEqual([v6.gateway, v6.oif, v6.unmodelled], [undefined, 2, ['via inet6 fe80::1']]);
  assert.deepEqual(decodeRoute(withAttributes('fd00:10:96::/112', [[18, rtvia(AF_INET, [10, 0, 0, 1])]])).unmodelled, [
    'via inet 10.0.0.1',
  ]);
  assert.deepEqual(decodeRoute(withAttributes('10.96.0.0/16', [[18, rtvia(AF_INET6, [1])]])).unmodelled, ['via inet6']);
  assert.deepEqual(decodeRoute(withAttributes('10.96.0.0/16', [[18, Buffer.from([10])]])).unmodelled, [
    'undecodable RTA_VIA (1 bytes)',
  ]);
});

test('what only a get answer carries (RTA_UID, RTA_IP_PROTO, RTA_SPORT, RTA_DPORT, RTA_FLOWLABEL) and attributes unknown to the agent are named, not dropped', () => {
  const u32 = Buffer.alloc(4);
  const r = decodeRoute(
    withAttributes('10.96.0.0/16', [
      [25, u32],
      [27, Buffer.from([6])],
      [28, Buffer.from([0, 80])],
      [29, Buffer.from([0, 80])],
      [31, u32],
      [99, u32],
      [24, Buffer.alloc(0)],
    ]),
  );
  assert.deepEqual(r.unmodelled, ['uid', 'ipproto', 'sport', 'dport', 'flowlabel', 'attribute 99']);
});

test('an attribute of the wrong size, or broken framing, makes the route unmodelled instead of failing its dump', () => {
  const cases: Array<[Array<[number, Buffer]>, string[]]> = [
    [[[5, Buffer.from([172, 18, 0])]], ['undecodable RTA_GATEWAY (3 bytes)']],
    [[[4, Buffer.from([1, 2])]], ['undecodable RTA_OIF (2 bytes)']],
    [[[12, Buffer.alloc(8)]], ['undecodable RTA_CACHEINFO (8 bytes)']],
    [[[20, Buffer.alloc(2)]], ['undecodable RTA_PREF (2 bytes)']],
    [[[8, Buffer.from([8, 0, 2, 0, 1, 2, 3])]], ['undecodable RTA_METRICS (7 bytes)']],
    [[[0x4000 | 5, Buffer.from([172, 18, 0, 1])]], ['undecodable RTA_GATEWAY (4 bytes)']],
  ];
  for (const [attrs, unmodelled] of cases)
    assert.deepEqual(decodeRoute(withAttributes('10.96.0.0/16', attrs)).unmodelled, unmodelled, JSON.stringify(attrs));
  // An attribute whose length runs past the message: what came before it is kept.
  const broken = withAttributes('10.96.0.0/16', [[5, Buffer.from([172, 18, 0, 1])]]);
  const truncated = Buffer.concat([broken, Buffer.from([0xff, 0x00, 0x05, 0x00])]);
  const r = decodeRoute(truncated);
  assert.equal(r.gateway?.toString('hex'), 'ac120001');
  assert.deepEqual(r.unmodelled, [`undecodable attributes from byte ${broken.length}`]);
  assert.throws(() => decodeRoute(Buffer.alloc(11)), /under struct rtmsg/);
});
