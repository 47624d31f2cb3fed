// The native socket's route filter (native/src/netlink_socket.c, point 8) and its
// large reads (point 7), on the real kernel: a dump read through the filter yields the
// watched prefixes of the filter's table and the dump's end, nothing else; read without
// it (or after the filter is taken off), every route, in replies larger than a page. A
// subscription's notifications through it: only the filter's table (main, or 1000, which
// only RTA_TABLE carries) and prefixes; a refused filter leaves the one in force. A
// subscription whose filter is refused closes its socket; one to no prefix sets none.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { SubscriptionChannel } from '../../src/dataplane/channel.js';
import { KernelDataplane } from '../../src/dataplane/kernel.js';
import { nativeTransport, type NetlinkTransport } from '../../src/dataplane/transport.js';
import { RTNLGRP_IPV4_ROUTE } from '../../src/dataplane/codec.js';

const addonModule = fileURLToPath(new URL('../../src/native/addon.js', import.meta.url));
const codecModule = fileURLToPath(new URL('../../src/dataplane/codec.js', import.meta.url));
const cidrModule = fileURLToPath(new URL('../../src/net/cidr.js', import.meta.url));

/** Dumps the main table of one family inside the namespace, with or without a filter; prints what JavaScript received. */
const script = (family: 4 | 6, filter: string[] | null, clear = false) => `
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
    if (${clear}) addon.netlinkSetRouteFilter(handle, null);
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

function dumpIn(ns: string, family: 4 | 6, filter: string[] | null, clear = false): Seen {
  const r = spawnSync(
    'ip',
    ['netns', 'exec', ns, process.execPath, '--input-type=module', '-e', script(family, filter, clear)],
    { encoding: 'utf8', maxBuffer: 1 << 26, timeout: 60_000 },
  );
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
    ns.batch(
      Array.from({ length: 2000 }, (_, i) => `route add 100.64.${i >> 8}.${i & 255}/32 via 172.18.0.1 dev br-ex`),
    );
    ns.ip('-6 route add fd00:10:96::/120 via fd00:172:18::1 dev br-ex');

    const filtered = dumpIn(ns.name, 4, ['10.96.0.0/16', '0.0.0.0/0']);
    assert.deepEqual(filtered.routes.sort(), [
      '0.0.0.0/0 table 254',
      '10.96.0.0/16 table 254',
      '10.96.0.0/16 table 254',
    ]);
    assert.equal(filtered.done, 1);
    assert.equal(filtered.other, 0);

    // A strict-check dump of the main table: the kernel itself leaves table 100 out.
    assert.ok(!filtered.routes.some((r) => !r.endsWith(' table 254')));

    const all = dumpIn(ns.name, 4, null);
    assert.ok(all.routes.length >= 2005, `${all.routes.length} routes without the filter`);
    assert.ok(all.routes.includes('10.96.0.0/24 table 254') && all.routes.includes('10.97.0.0/16 table 254'));
    // Point 7: replies of up to 32 KiB, not one page each.
    assert.ok(all.largest > 8192, `largest datagram ${all.largest} bytes`);

    // A filter set and then taken off (null): every route again.
    const cleared = dumpIn(ns.name, 4, ['10.96.0.0/16', '0.0.0.0/0'], true);
    assert.equal(cleared.routes.length, all.routes.length);
    assert.ok(cleared.routes.includes('10.96.0.0/24 table 254') && cleared.routes.includes('10.97.0.0/16 table 254'));

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
    assert.throws(
      () => addon.netlinkSetRouteFilter(handle, Buffer.alloc(8)),
      { name: 'TypeError' },
      'no prefix at all',
    );
    addon.netlinkSetRouteFilter(handle, null);
  } finally {
    addon.netlinkClose(handle);
  }
});

const subscriptionScript = (commands: string[][]) => `
const { addon } = await import(${JSON.stringify(addonModule)});
const codec = await import(${JSON.stringify(codecModule)});
const { parseCidr, addressFromBytes } = await import(${JSON.stringify(cidrModule)});
const { execFileSync } = await import('node:child_process');
const handle = addon.netlinkOpen({ groups: [codec.RTNLGRP_IPV4_ROUTE, codec.RTNLGRP_IPV6_ROUTE], rcvbuf: 4 << 20 }, () => undefined);
const filterOf = (table) => codec.encodeRouteFilter(table, ['10.96.0.0/16', 'fd00:10:96::/112'].map((text) => {
  const c = parseCidr(text);
  return { af: c.family === 4 ? codec.AF_INET : codec.AF_INET6, length: c.length, bytes: c.bytes, label: c.text };
}));
const filter = filterOf(codec.RT_TABLE_MAIN);
/** Runs the commands (the kernel queues their notifications before ip returns), then reads what came through. */
const run = () => {
  for (const args of ${JSON.stringify(commands)}) execFileSync('ip', args);
  const seen = [];
  for (let d = addon.netlinkRecv(handle); d !== null; d = addon.netlinkRecv(handle)) {
    for (const msg of codec.parseDatagram(d)) {
      if (msg.type !== codec.RTM_NEWROUTE && msg.type !== codec.RTM_DELROUTE) { seen.push('type ' + msg.type); continue; }
      const r = codec.decodeRoute(msg.data);
      seen.push((msg.type === codec.RTM_NEWROUTE ? 'new ' : 'del ') + addressFromBytes(r.dst).text + '/' + r.dstLen + ' table ' + codec.routeTable(msg.data));
    }
  }
  return seen;
};
const out = {};
addon.netlinkSetRouteFilter(handle, filter);
out.filtered = run();
// Refused (malformed, or empty): the filter in force stays as it was.
for (const bad of [Buffer.alloc(9), Buffer.alloc(8)]) {
  try { addon.netlinkSetRouteFilter(handle, bad); out.accepted = true; } catch (err) { out.refused = (out.refused ?? 0) + 1; }
}
out.afterRefused = run();
// A table above 255 is only in RTA_TABLE (rtm_table says RT_TABLE_COMPAT): the filter reads it there.
addon.netlinkSetRouteFilter(handle, filterOf(1000));
out.table1000 = run();
addon.netlinkSetRouteFilter(handle, null);
out.unfiltered = run();
addon.netlinkClose(handle);
console.log(JSON.stringify(out));
`;

test('native route filter on notifications: only main-table adds and deletes of the prefixes reach JavaScript (table 100, table 1000 through RTA_TABLE, IPv6); a refused filter keeps the one in force; null lets all through', (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ ipv6: true });
  try {
    const v4 = ['10.96.0.0/16', 'via', '172.18.0.1', 'dev', 'br-ex'];
    const v6 = ['fd00:10:96::/112', 'via', 'fd00:172:18::1', 'dev', 'br-ex'];
    const commands: string[][] = [];
    for (const [family, route] of [
      ['-4', v4],
      ['-6', v6],
    ] as const) {
      for (const where of [
        ['table', '100'],
        ['table', '1000'],
        ['metric', '77'],
      ]) {
        commands.push([family, 'route', 'add', ...route, ...where], [family, 'route', 'del', ...route, ...where]);
      }
    }
    commands.push(
      ['-4', 'route', 'add', '10.97.0.0/16', 'via', '172.18.0.1', 'dev', 'br-ex'],
      ['-4', 'route', 'del', '10.97.0.0/16'],
    );
    const r = spawnSync(
      'ip',
      ['netns', 'exec', ns.name, process.execPath, '--input-type=module', '-e', subscriptionScript(commands)],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      filtered: string[];
      afterRefused: string[];
      table1000: string[];
      unfiltered: string[];
      refused?: number;
      accepted?: boolean;
    };
    const mainOnly = [
      'new 10.96.0.0/16 table 254',
      'del 10.96.0.0/16 table 254',
      'new fd00:10:96::/112 table 254',
      'del fd00:10:96::/112 table 254',
    ];
    assert.deepEqual(out.filtered, mainOnly);
    assert.equal(out.refused, 2);
    assert.equal(out.accepted, undefined);
    assert.deepEqual(out.afterRefused, mainOnly, 'a refused filter left the one in force');
    assert.deepEqual(
      out.table1000,
      mainOnly.map((m) => m.replace('table 254', 'table 1000')),
    );
    for (const table of ['100', '1000', '254']) {
      for (const op of ['new', 'del']) {
        assert.ok(
          out.unfiltered.includes(`${op} 10.96.0.0/16 table ${table}`),
          `${op} ${table}: ${out.unfiltered.join(', ')}`,
        );
        assert.ok(
          out.unfiltered.includes(`${op} fd00:10:96::/112 table ${table}`),
          `${op} v6 ${table}: ${out.unfiltered.join(', ')}`,
        );
      }
    }
    assert.ok(out.unfiltered.includes('new 10.97.0.0/16 table 254'));
  } finally {
    ns.destroy();
  }
});

test('a subscription whose route filter is refused closes its socket before the error reaches the caller', () => {
  let opened = 0;
  let closed = 0;
  const transport: NetlinkTransport = {
    open(options, onReadable) {
      const socket = nativeTransport.open(options, onReadable);
      opened++;
      return { ...socket, close: () => (closed++, socket.close()) };
    },
  };
  const handlers = { onMessage: () => undefined, onLost: () => undefined };
  assert.throws(
    () =>
      new SubscriptionChannel(
        transport,
        { required: [RTNLGRP_IPV4_ROUTE], optional: [] },
        handlers,
        1 << 16,
        Buffer.alloc(9),
      ),
    { name: 'TypeError' },
  );
  assert.equal(opened, 1);
  assert.equal(closed, 1, 'the socket of the failed constructor is closed');
});

test('a subscription to no prefix at all opens without a native filter (the addon refuses an empty one)', () => {
  const dp = new KernelDataplane({});
  try {
    const sub = dp.subscribe({ prefixes: [], links: ['br-ex'] }, () => undefined);
    sub.close();
  } finally {
    dp.close();
  }
});
