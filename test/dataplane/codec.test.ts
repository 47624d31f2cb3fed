// The codec's raw paths and the kernel-shaped messages, checked against what the
// netlink codec encodes and decodes.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import {
  AF_INET,
  AF_INET6,
  decodeAddress,
  decodeAck,
  encodeLinkGet,
  decodeLink,
  decodeRoute,
  encodeRoute,
  encodeRouteReplace,
  NLM_F_CREATE,
  NLM_F_REPLACE,
  parseDatagram,
  PrefixFilter,
  routeKey,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWROUTE,
  type RouteMessage,
} from '../../src/dataplane/codec.js';
import { NetlinkError } from '../../src/dataplane/errors.js';
import { parseAddress, parseCidr } from '../../src/net/cidr.js';
import { encodeAddress, encodeDone, encodeError, encodeLink } from '../helpers/kernel-encode.js';

function routeMessage(prefix: string, gateway: string, table: number, mtu: number | undefined): RouteMessage {
  const cidr = parseCidr(prefix);
  return {
    family: cidr.family === 4 ? AF_INET : AF_INET6,
    dst: cidr.length === 0 ? undefined : cidr.bytes,
    dstLen: cidr.length,
    table,
    tos: 0,
    priority: 0,
    protocol: 3,
    scope: 0,
    type: 1,
    gateway: parseAddress(gateway).bytes,
    oif: 4,
    mtu,
  };
}

function payloadOf(datagram: Buffer): Buffer {
  return parseDatagram(datagram)[0]!.data;
}

function filterOf(...prefixes: string[]): PrefixFilter {
  return new PrefixFilter(prefixes.map(parseCidr));
}

test('PrefixFilter matches family, length, RTA_DST and the main table from the raw bytes, default routes included', () => {
  const p = payloadOf(encodeRoute(RTM_NEWROUTE, 0, 1, 0, routeMessage('10.96.0.0/16', '10.244.1.1', 254, undefined)));
  assert.equal(filterOf('10.96.0.0/16').match(p), '10.96.0.0/16');
  assert.equal(filterOf('10.96.0.0/24').match(p), undefined);
  assert.equal(filterOf('10.97.0.0/16').match(p), undefined);
  assert.equal(filterOf('a60::/16').match(p), undefined, 'same bytes and length, other family');
  const d4 = payloadOf(encodeRoute(RTM_NEWROUTE, 0, 1, 0, routeMessage('0.0.0.0/0', '172.18.0.1', 254, undefined)));
  const d6 = payloadOf(encodeRoute(RTM_NEWROUTE, 0, 1, 0, routeMessage('::/0', 'fd00::1', 254, undefined)));
  assert.equal(filterOf('0.0.0.0/0', '::/0').match(d4), '0.0.0.0/0');
  assert.equal(filterOf('0.0.0.0/0', '::/0').match(d6), '::/0');
  assert.equal(routeKey(p).table, 254);
  for (const table of [100, 1000]) {
    const other = payloadOf(
      encodeRoute(RTM_NEWROUTE, 0, 1, 0, routeMessage('10.96.0.0/16', '10.244.1.1', table, undefined)),
    );
    assert.equal(filterOf('10.96.0.0/16').match(other), undefined, `table ${table}`);
  }
});

test('a route with a table above 255 keeps it in RTA_TABLE; MTU and TOS survive the round trip', () => {
  const p = payloadOf(
    encodeRoute(RTM_NEWROUTE, 0, 1, 0, { ...routeMessage('fd00:10:96::/112', 'fd00:10:244:1::1', 1000, 1400), tos: 0 }),
  );
  assert.equal(routeKey(p).table, 1000);
  const r = decodeRoute(p);
  assert.equal(r.mtu, 1400);
  assert.equal(r.dstLen, 112);
  assert.equal(r.protocol, 3);
  const t = decodeRoute(
    payloadOf(
      encodeRoute(RTM_NEWROUTE, 0, 1, 0, { ...routeMessage('10.96.0.0/16', '10.244.1.1', 254, undefined), tos: 0x10 }),
    ),
  );
  assert.equal(t.tos, 0x10);
});

test("an IPv6 route's expiry is read from RTA_CACHEINFO (rta_expires): any value but 0 is one a replace would drop", () => {
  const RTA_CACHEINFO = 12;
  /** The route's payload with an RTA_CACHEINFO attribute (struct rta_cacheinfo, 32 bytes) whose rta_expires is `expires`. */
  const withCacheInfo = (expires: number) => {
    const attr = Buffer.alloc(4 + 32);
    attr.writeUInt16LE(attr.length, 0);
    attr.writeUInt16LE(RTA_CACHEINFO, 2);
    attr.writeInt32LE(expires, 4 + 8);
    return Buffer.concat([
      payloadOf(encodeRoute(RTM_NEWROUTE, 0, 1, 0, routeMessage('fd00:10:96::/112', 'fd00:172:18::1', 254, 1400))),
      attr,
    ]);
  };
  // 0 is a permanent route (as every route ovnkube-node makes); negative, expired but not yet removed.
  for (const [expires, unmodelled] of [
    [0, []],
    [30_000, ['expires']],
    [1, ['expires']],
    [-3, ['expires']],
  ] as const) {
    assert.deepEqual(decodeRoute(withCacheInfo(expires)).unmodelled, unmodelled, `rta_expires ${expires}`);
  }
});

test('a replace asks NLM_F_REPLACE and never NLM_F_CREATE, in both families', () => {
  for (const [prefix, gateway] of [
    ['10.96.0.0/16', '10.244.1.1'],
    ['fd00:10:96::/112', 'fd00:10:244:1::1'],
  ] as const) {
    const [msg] = parseDatagram(encodeRouteReplace(1, 0, routeMessage(prefix, gateway, 254, undefined)));
    assert.ok(msg);
    assert.equal(msg.flags & NLM_F_REPLACE, NLM_F_REPLACE);
    assert.equal(msg.flags & NLM_F_CREATE, 0, prefix);
  }
});

test('NLMSG_DONE: the error and the ext-ack text that follows it directly', () => {
  const [done] = parseDatagram(encodeDone(7, 0, 22, 'Invalid values in header for FIB dump request'));
  assert.ok(done);
  assert.deepEqual(decodeAck(done), { errno: 22, extAck: 'Invalid values in header for FIB dump request' });
  const [clean] = parseDatagram(encodeDone(7, 0));
  assert.ok(clean);
  assert.deepEqual(decodeAck(clean), { errno: 0, extAck: undefined });
});

test('NLMSG_ERROR: an error echoes the whole request before the ext-ack text; an ACK is capped', () => {
  const [request] = parseDatagram(encodeRouteReplace(9, 0, routeMessage('10.96.0.0/16', '192.0.2.1', 254, undefined)));
  assert.ok(request);
  const [error] = parseDatagram(encodeError(0, request, 101, 'Nexthop has invalid gateway'));
  assert.ok(error);
  assert.equal(error.seq, 9);
  assert.deepEqual(decodeAck(error), { errno: 101, extAck: 'Nexthop has invalid gateway' });
  const [ack] = parseDatagram(encodeError(0, request, 0));
  assert.ok(ack);
  assert.deepEqual(decodeAck(ack), { errno: 0, extAck: undefined });
  // A request of a length that is no multiple of 4 (a link asked for by a name of 6 bytes) is echoed padded.
  const [odd] = parseDatagram(encodeLinkGet(10, 0, { name: 'br-ex1' }));
  assert.ok(odd && odd.data.length % 4 !== 0);
  const [refused] = parseDatagram(encodeError(0, odd, 34, 'Attribute failed policy validation'));
  assert.ok(refused);
  assert.deepEqual(decodeAck(refused), { errno: 34, extAck: 'Attribute failed policy validation' });
});

test('links carry their MTU; addresses their tentative and dadfailed flags', () => {
  const link = { index: 3, name: 'br-ex', up: true, mtu: 1400 };
  assert.deepEqual(decodeLink(payloadOf(encodeLink(RTM_NEWLINK, 0, 1, 0, link))), link);
  for (const [tentative, dadFailed] of [
    [false, false],
    [true, false],
    [true, true],
  ] as const) {
    const a = {
      family: AF_INET6,
      index: 3,
      prefixLength: 64,
      address: parseAddress('fd00::1').bytes,
      tentative,
      dadFailed,
    };
    assert.deepEqual(decodeAddress(payloadOf(encodeAddress(RTM_NEWADDR, 0, 1, 0, a))), a);
  }
});

test("a kernel error's code is the errno's name as os.constants has it, whatever libuv calls it: metric labels and alerts key on it", () => {
  for (const [errno, code] of [
    [95, 'EOPNOTSUPP'],
    [42, 'ENOMSG'],
    [74, 'EBADMSG'],
    [122, 'EDQUOT'],
    [17, 'EEXIST'],
  ] as const) {
    const err = new NetlinkError(errno, 'replace');
    assert.equal(err.code, code);
    assert.match(err.message, new RegExp(`^replace ${code}: `));
  }
  assert.equal(new NetlinkError(4095, 'replace').code, 'E4095');
});
