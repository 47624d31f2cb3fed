// The codec's raw fast paths, checked against messages the netlink codec encodes.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { AF_INET, AF_INET6, decodeRoute, encodeRouteReplace, parseDatagram, routeDestination, routeMatchesPrefix, routeTable } from '../../src/dataplane/codec.js';
import { parseAddress, parseCidr } from '../../src/net/cidr.js';

function routePayload(prefix: string, gateway: string, table: number, mtu: number | undefined) {
  const cidr = parseCidr(prefix);
  const msg = encodeRouteReplace(1, 0, {
    family: cidr.family === 4 ? AF_INET : AF_INET6,
    dst: cidr.bytes,
    dstLen: cidr.length,
    table,
    priority: 0,
    protocol: 3,
    scope: 0,
    type: 1,
    gateway: parseAddress(gateway).bytes,
    oif: 4,
    mtu,
  });
  return parseDatagram(msg)[0]!.data;
}

test('routeMatchesPrefix reads family, length and RTA_DST from the raw bytes', () => {
  const p = routePayload('10.96.0.0/16', '10.244.1.1', 254, undefined);
  const c = parseCidr('10.96.0.0/16');
  assert.equal(routeMatchesPrefix(p, AF_INET, c.bytes, 16), true);
  assert.equal(routeMatchesPrefix(p, AF_INET, c.bytes, 24), false);
  assert.equal(routeMatchesPrefix(p, AF_INET, parseCidr('10.97.0.0/16').bytes, 16), false);
  assert.equal(routeMatchesPrefix(p, AF_INET6, c.bytes, 16), false);
  assert.deepEqual(routeDestination(p), c.bytes);
  assert.equal(routeTable(p), 254);
});

test('a route with a table above 255 keeps it in RTA_TABLE; the MTU survives the round trip', () => {
  const p = routePayload('fd00:10:96::/112', 'fd00:10:244:1::1', 1000, 1400);
  assert.equal(routeTable(p), 1000);
  const r = decodeRoute(p);
  assert.equal(r.mtu, 1400);
  assert.equal(r.dstLen, 112);
  assert.equal(r.protocol, 3);
});
