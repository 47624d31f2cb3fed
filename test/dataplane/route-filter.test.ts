// The native socket's route filter (native/src/netlink_socket.c, point 8) and its
// large reads (point 7), on the real kernel: a dump read through the filter yields the
// watched prefixes of the filter's table and the dump's end, nothing else; read without
// it, every route, in replies larger than a page.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';

const addonModule = fileURLToPath(new URL('../../src/native/addon.js', import.meta.url));
const codecModule = fileURLToPath(new URL('../../src/dataplane/codec.js', import.meta.url));
const cidrModule = fileURLToPath(new URL('../../src/net/cidr.js', import.meta.url));

/** Dumps the main table of one family inside the namespace, with or without a filter; prints what JavaScript received. */
const script = (family: 4 | 6, filter: string[] | null) => `
const { addon } = await import(${JSON.stringify(addonModule)});
const codec = await import(${JSON.stringify(codecModule)});
const { parseCidr, addressFromBytes } = await import(${JSON.stringify(cidrModule)});
const af = ${family} === 4 ? codec.AF_INET : codec.AF_INET6;
const filter = ${JSON.stringify(filter)};
const seen = { routes: [], done: 0, other: 0, datagrams: 0, largest: 0 };
await new Promise((resolve, reject) => {
  const handle = addon.netlinkOpen({ strictCheck: true, rcvbuf: 4 << 20 }, () => {
    try {
      for (let d = addon.netlinkRecv(handle); d !== null; d = addon.netlinkRecv(handle)) {
        seen.datagrams++;
        seen.largest = Math.max(seen.largest, d.length);
        for (const msg of codec.parseDatagram(d)) {
          if (msg.type === codec.NLMSG_DONE) seen.done++;
          else if (msg.type === codec.RTM_NEWROUTE) {
            const r = codec.decodeRoute(msg.data);
            seen.routes.push((r.dst ? addressFromBytes(r.dst).text : (af === codec.AF_INET ? '0.0.0.0' : '::')) + '/' + r.dstLen + ' table ' + codec.routeTable(msg.data));
          } else seen.other++;
        }
        if (seen.done) { addon.netlinkClose(handle); resolve(); return; }
      }
    } catch (err) { reject(err); }
  });
  if (filter) {
    const prefixes = filter.map((text) => { const c = parseCidr(text); return { af: c.family === 4 ? codec.AF_INET : codec.AF_INET6, length: c.length, bytes: c.bytes, label: c.text }; });
    addon.netlinkSetRouteFilter(handle, codec.encodeRouteFilter(codec.RT_TABLE_MAIN, prefixes));
  }
  addon.netlinkSend(handle, codec.encodeRouteDump(1, addon.netlinkPortId(handle), af, codec.RT_TABLE_MAIN));
});
console.log(JSON.stringify(seen));
`;

interface Seen {
  routes: string[];
  done: number;
  other: number;
  datagrams: number;
  largest: number;
}

function dumpIn(ns: string, family: 4 | 6, filter: string[] | null): Seen {
  const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '--input-type=module', '-e', script(family, filter)], { encoding: 'utf8', maxBuffer: 1 << 26, timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Seen;
}

test('native route filter: a dump yields only the filtered prefixes of the main table, whatever else shares their address, length or table', (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ ipv6: true });
  try {
    // Near misses of 10.96.0.0/16: another length, another address, another table; and 2,000 unrelated routes.
    ns.ip('route add 10.96.0.0/24 via 172.18.0.1 dev br-ex');
    ns.ip('route add 10.97.0.0/16 via 172.18.0.1 dev br-ex');
    ns.ip('route add 10.96.0.0/16 via 172.18.0.1 dev br-ex table 100');
    ns.ip('route add 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0 metric 50');
    ns.batch(Array.from({ length: 2000 }, (_, i) => `route add 100.64.${i >> 8}.${i & 255}/32 via 172.18.0.1 dev br-ex`));
    ns.ip('-6 route add fd00:10:96::/120 via fd00:172:18::1 dev br-ex');

    const filtered = dumpIn(ns.name, 4, ['10.96.0.0/16', '0.0.0.0/0']);
    assert.deepEqual(filtered.routes.sort(), ['0.0.0.0/0 table 254', '10.96.0.0/16 table 254', '10.96.0.0/16 table 254']);
    assert.equal(filtered.done, 1);
    assert.equal(filtered.other, 0);

    const all = dumpIn(ns.name, 4, null);
    assert.ok(all.routes.length >= 2005, `${all.routes.length} routes without the filter`);
    assert.ok(all.routes.includes('10.96.0.0/24 table 254') && all.routes.includes('10.97.0.0/16 table 254'));
    // Point 7: replies of up to 32 KiB, not one page each.
    assert.ok(all.largest > 8192, `largest datagram ${all.largest} bytes`);

    const six = dumpIn(ns.name, 6, ['fd00:10:96::/112', '::/0']);
    assert.deepEqual(six.routes.sort(), ['::/0 table 254', 'fd00:10:96::/112 table 254']);
    assert.equal(six.done, 1);
  } finally {
    ns.destroy();
  }
});

test('native route filter: a malformed filter is refused, and null takes the filter off', async () => {
  const { addon } = await import('../../src/native/addon.js');
  const handle = addon.netlinkOpen({}, () => undefined);
  try {
    assert.throws(() => addon.netlinkSetRouteFilter(handle, Buffer.alloc(9)), { name: 'TypeError' });
    assert.throws(() => addon.netlinkSetRouteFilter(handle, Buffer.alloc(8)), { name: 'TypeError' }, 'no prefix at all');
    addon.netlinkSetRouteFilter(handle, null);
  } finally {
    addon.netlinkClose(handle);
  }
});
