// The subscription's kernel-side filter (src/dataplane/socket-filter.ts) on the real
// kernel. Differential: two sockets subscribed to the same groups see the same seeded
// churn of route changes, one with the program attached and one without; what the
// program let through must be exactly what the unfiltered socket got, less the route
// messages the JavaScript filter drops (PrefixFilter, and the main table) - never one
// more, never one less. Then what it is for: a churn of other routes while nobody reads
// no longer overflows the receive buffer, and the program is accepted by the kernel for
// every prefix set it builds one for.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { prng } from '../helpers/prng.js';
import { runClassicBpf } from '../helpers/cbpf.js';
import { routeSocketFilter } from '../../src/dataplane/socket-filter.js';
import { KernelDataplane } from '../../src/dataplane/kernel.js';
import { nativeTransport, type NetlinkTransport } from '../../src/dataplane/transport.js';
import type { DataplaneEvent } from '../../src/dataplane/types.js';
import { AF_INET, AF_INET6, RT_TABLE_MAIN, type FilterPrefix } from '../../src/dataplane/codec.js';
import { parseCidr } from '../../src/net/cidr.js';

const addonModule = fileURLToPath(new URL('../../src/native/addon.js', import.meta.url));
const codecModule = fileURLToPath(new URL('../../src/dataplane/codec.js', import.meta.url));
const filterModule = fileURLToPath(new URL('../../src/dataplane/socket-filter.js', import.meta.url));
const cidrModule = fileURLToPath(new URL('../../src/net/cidr.js', import.meta.url));

/** Sets whose comparisons run past CHUNK instructions, so that returns sit inside a group. */
const CHUNKED_V4 = [
  ...Array.from({ length: 250 }, (_, i) => `10.97.${i}.0/24`),
  '10.96.0.0/16',
  '10.96.0.0/12',
  '10.96.5.5/32',
  '::/0',
];
const CHUNKED_V6 = [
  ...Array.from({ length: 30 }, (_, i) => `fd00:10:96::${i.toString(16)}:0/112`),
  'fd00:10:96::/64',
  'fd00:10:96::5/128',
  '0.0.0.0/0',
];
/** Every length of both families (of the zero address, the one valid at every length). */
const ALL_LENGTHS = [
  ...Array.from({ length: 33 }, (_, l) => `0.0.0.0/${l}`),
  ...Array.from({ length: 129 }, (_, l) => `::/${l}`),
];

function prefixesOf(texts: string[]): FilterPrefix[] {
  return texts.map((text) => {
    const c = parseCidr(text);
    return { af: c.family === 4 ? AF_INET : AF_INET6, length: c.length, bytes: c.bytes, label: c.text };
  });
}

/**
 * In the namespace: opens the sockets, runs the ip batch, reads everything queued. Each
 * socket is { program: boolean, rcvbuf }; prints per socket the datagrams (hex) and
 * whether a read reported ENOBUFS.
 */
const script = (
  watched: string[],
  sockets: { program: boolean; rcvbuf: number }[],
  batchFile: string,
  after: string[][],
) => `
const { addon } = await import(${JSON.stringify(addonModule)});
const codec = await import(${JSON.stringify(codecModule)});
const { routeSocketFilter } = await import(${JSON.stringify(filterModule)});
const { parseCidr } = await import(${JSON.stringify(cidrModule)});
const { execFileSync } = await import('node:child_process');
const prefixes = ${JSON.stringify(watched)}.map((text) => {
  const c = parseCidr(text);
  return { af: c.family === 4 ? codec.AF_INET : codec.AF_INET6, length: c.length, bytes: c.bytes, label: c.text };
});
const program = routeSocketFilter(codec.RT_TABLE_MAIN, prefixes);
const groups = [codec.RTNLGRP_LINK, codec.RTNLGRP_IPV4_ROUTE, codec.RTNLGRP_IPV6_ROUTE];
const handles = ${JSON.stringify(sockets)}.map((s) => {
  const handle = addon.netlinkOpen({ groups, rcvbuf: s.rcvbuf }, () => undefined);
  if (s.program) addon.netlinkAttachFilter(handle, program);
  return handle;
});
execFileSync('ip', ['-force', '-batch', ${JSON.stringify(batchFile)}], { stdio: 'ignore' });
for (const args of ${JSON.stringify(after)}) execFileSync('ip', args);
const out = handles.map((handle) => {
  const seen = { datagrams: [], enobufs: 0 };
  for (;;) {
    let d;
    try { d = addon.netlinkRecv(handle); } catch (err) { if (err.code === 'ENOBUFS') { seen.enobufs++; continue; } throw err; }
    if (d === null) break;
    seen.datagrams.push(d.toString('hex'));
  }
  addon.netlinkClose(handle);
  return seen;
});
console.log(JSON.stringify({ instructions: program ? program.length / 8 : 0, out }));
`;

interface Run {
  instructions: number;
  out: { datagrams: string[]; enobufs: number }[];
}

function runIn(
  ns: { name: string },
  watched: string[],
  sockets: { program: boolean; rcvbuf: number }[],
  batch: string[],
  after: string[][] = [],
): Run {
  const dir = spawnSync('mktemp', ['-d'], { encoding: 'utf8' }).stdout.trim();
  const file = `${dir}/batch`;
  spawnSync('sh', ['-c', `cat > ${file}`], { input: batch.join('\n') + '\n' });
  try {
    const r = spawnSync(
      'ip',
      ['netns', 'exec', ns.name, process.execPath, '--input-type=module', '-e', script(watched, sockets, file, after)],
      {
        encoding: 'utf8',
        maxBuffer: 1 << 28,
        timeout: 120_000,
      },
    );
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as Run;
  } finally {
    spawnSync('rm', ['-rf', dir]);
  }
}

/** What the JavaScript reader keeps of a datagram: not a route message, or one of the prefixes in the main table. */
async function keptByReader(watched: string[]): Promise<(hex: string) => boolean> {
  const codec = await import('../../src/dataplane/codec.js');
  const filter = new codec.PrefixFilter(prefixesOf(watched));
  return (hex) => {
    const messages = codec.parseDatagram(Buffer.from(hex, 'hex'));
    return messages.some(
      (m) =>
        (m.type !== codec.RTM_NEWROUTE && m.type !== codec.RTM_DELROUTE) ||
        (filter.match(m.data) !== undefined && codec.routeTable(m.data) === RT_TABLE_MAIN),
    );
  };
}

/** A seeded churn of route changes near the watched prefixes and far from them, both families, several tables. */
function churn(seed: number, count: number): string[] {
  const rand = prng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const lines: string[] = [];
  const v4 = () => {
    const length = pick([0, 8, 15, 16, 16, 17, 24, 32]);
    const bytes = pick([
      [10, 96, 0, 0],
      [10, 97, 0, 0],
      [10, 96, 128, 0],
      [10, 97, Math.floor(rand() * 256), 0],
      [Math.floor(rand() * 223) + 1, Math.floor(rand() * 256), Math.floor(rand() * 256), Math.floor(rand() * 256)],
    ]);
    const mask = length === 0 ? 0 : (0xffffffff << (32 - length)) >>> 0;
    const n = ((((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0) & mask) >>> 0;
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}/${length}`;
  };
  const v6 = () => {
    const length = pick([0, 64, 111, 112, 112, 113, 128]);
    // Near misses in every 32-bit word of the address, the last ones included.
    const base = pick([
      'fd00:10:96::',
      'fd00:10:97::',
      'fd00:10:96::8000',
      'fd00:10:96::1:0',
      'fd00:10:96:0:1::',
      'fd00:10:96:1::',
      `fd00:${Math.floor(rand() * 0xffff).toString(16)}::`,
    ]);
    const c = parseCidr(`${base}/128`);
    const bytes = Buffer.from(c.bytes);
    for (let bit = length; bit < 128; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
    const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16));
    return `${groups.join(':')}/${length}`;
  };
  for (let i = 0; i < count; i++) {
    const six = rand() < 0.4;
    const prefix = six ? v6() : v4();
    const where = pick(['', '', ' table 100', ' table 1000', ' metric 77']);
    const via = six ? 'via fd00:172:18::1 dev br-ex' : 'via 172.18.0.1 dev br-ex';
    lines.push(`route replace ${prefix} ${via}${where}`);
    if (rand() < 0.5) lines.push(`route del ${prefix}${where}`);
  }
  return lines;
}

for (const watched of [
  ['10.96.0.0/16', 'fd00:10:96::/112'],
  ['10.96.0.0/16', '10.97.0.0/16', '0.0.0.0/0', 'fd00:10:96::/112', '::/0'],
  // As bench:scale watches: a hundred /24s beside the service CIDR, and the default routes.
  [
    '10.96.0.0/16',
    ...Array.from({ length: 100 }, (_, i) => `10.97.${i * 2}.0/24`),
    '0.0.0.0/0',
    'fd00:10:96::/112',
    '::/0',
  ],
  // Returns inside a group (over CHUNK instructions of comparisons), several lengths, a family with only its default route.
  CHUNKED_V4,
]) {
  test(`socket filter, differential on the real kernel (${watched.length > 5 ? `${watched.length} prefixes` : watched.join(', ')}): it lets through exactly what the reader keeps`, async (t) => {
    if (skipWithoutKernel(t)) return;
    const keep = await keptByReader(watched);
    const ns = seedNode({ ipv6: true });
    try {
      const batch = churn(watched.length, 3000);
      const run = runIn(
        ns,
        watched,
        [
          { program: true, rcvbuf: 64 << 20 },
          { program: false, rcvbuf: 64 << 20 },
        ],
        batch,
        [['link', 'set', 'ovn-k8s-mp0', 'down']],
      );
      const [filtered, all] = run.out as [Run['out'][0], Run['out'][0]];
      assert.equal(filtered.enobufs + all.enobufs, 0, 'a receive buffer large enough for the whole churn');
      const expected = all.datagrams.filter(keep);
      // The churn reached the watched prefixes (in main and elsewhere) and far from them.
      assert.ok(all.datagrams.length > 2000, `${all.datagrams.length} notifications`);
      assert.ok(
        expected.length >= 20 && expected.length < all.datagrams.length / 4,
        `${expected.length} of ${all.datagrams.length} kept by the reader`,
      );
      assert.deepEqual(filtered.datagrams, expected);
      // The interpreter the fuzz test below runs the program in agrees with the kernel on every one.
      const program = routeSocketFilter(RT_TABLE_MAIN, prefixesOf(watched))!;
      const kept = new Set(filtered.datagrams);
      for (const hex of all.datagrams)
        assert.equal(runClassicBpf(program, Buffer.from(hex, 'hex')) !== 0, kept.has(hex), hex);
    } finally {
      ns.destroy();
    }
  });
}

test('socket filter: a churn of 20,000 other routes while nobody reads leaves the receive buffer room; without it, the same churn overflows it', (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ ipv6: true });
  try {
    const watched = ['10.96.0.0/16', 'fd00:10:96::/112'];
    const batch: string[] = [];
    for (let i = 0; i < 10_000; i++)
      batch.push(`route add 10.${100 + (i >> 8)}.${i & 255}.0/24 via 172.18.0.1 dev br-ex`);
    for (let i = 0; i < 10_000; i++) batch.push(`route del 10.${100 + (i >> 8)}.${i & 255}.0/24`);
    const run = runIn(
      ns,
      watched,
      [
        { program: true, rcvbuf: 1 << 20 },
        { program: false, rcvbuf: 1 << 20 },
      ],
      batch,
      [['route', 'replace', '10.96.0.0/16', 'via', '10.244.1.1', 'dev', 'ovn-k8s-mp0']],
    );
    const [filtered, all] = run.out as [Run['out'][0], Run['out'][0]];
    assert.equal(filtered.enobufs, 0, 'nothing lost with the program');
    assert.equal(filtered.datagrams.length, 1, 'the watched change, and only it');
    assert.ok(all.enobufs > 0, 'the same churn overflows a socket without it');
  } finally {
    ns.destroy();
  }
});

test('socket filter: the kernel accepts the program for one to sixteen prefixes of both families, and for a hundred; none for no prefix, none past 4,096 instructions', (t) => {
  if (skipWithoutKernel(t)) return;
  assert.equal(routeSocketFilter(RT_TABLE_MAIN, []), null);
  const v6 = (n: number) => Array.from({ length: n }, (_, i) => `fd00:10:${i.toString(16)}::/112`);
  const sets: string[][] = [];
  sets.push(CHUNKED_V4, CHUNKED_V6, ALL_LENGTHS);
  for (let n = 1; n <= 16; n++) {
    sets.push(
      Array.from({ length: n }, (_, i) =>
        i % 2 === 0 ? `10.${96 + i}.0.0/16` : `fd00:10:${(96 + i).toString(16)}::/112`,
      ),
    );
  }
  // bench:scale's hundred /24s; more may pass net.core.optmem_max (ENOMEM: the test above).
  sets.push(
    v6(20),
    Array.from({ length: 100 }, (_, i) => `10.97.${i}.0/24`),
  );
  sets.push(['0.0.0.0/0'], ['::/0'], ['10.96.0.0/16', '0.0.0.0/0'], ['10.96.0.0/32', '10.96.0.0/12', '10.96.0.0/16']);
  for (const watched of sets) {
    const program = routeSocketFilter(RT_TABLE_MAIN, prefixesOf(watched));
    assert.ok(program, `${watched.length} prefixes`);
  }
  assert.ok(routeSocketFilter(RT_TABLE_MAIN, prefixesOf(v6(300))), 'within 4,096 instructions');
  assert.equal(routeSocketFilter(RT_TABLE_MAIN, prefixesOf(v6(500))), null);
  // The kernel's own check, on each: attach every program to a socket in the namespace;
  // with room enough in its option memory (per namespace on this kernel), the largest too.
  const ns = seedNode({});
  try {
    try {
      ns.sysctl('net.core.optmem_max', String(4 << 20));
      sets.push(v6(300), v6(490));
    } catch {
      process.stderr.write('net.core.optmem_max is not per namespace here: the largest programs are not attached\n');
    }
    for (const watched of sets) {
      const run = runIn(
        ns,
        watched,
        [{ program: true, rcvbuf: 1 << 20 }],
        [`route replace 10.96.0.0/16 via 172.18.0.1 dev br-ex`],
      );
      assert.ok(run.instructions > 0);
    }
  } finally {
    ns.destroy();
  }
});

test('a program the kernel refuses (ENOMEM past net.core.optmem_max) leaves the subscription open without it, and says so once', async () => {
  let closed = 0;
  let attached = 0;
  const transport: NetlinkTransport = {
    open(options, onReadable) {
      const socket = nativeTransport.open(options, onReadable);
      return {
        ...socket,
        attachFilter: () => {
          attached++;
          throw Object.assign(new Error('setsockopt(SO_ATTACH_FILTER) ENOMEM'), {
            errno: 12,
            code: 'ENOMEM',
            syscall: 'setsockopt(SO_ATTACH_FILTER)',
          });
        },
        close: () => (closed++, socket.close()),
      };
    },
  };
  const dp = new KernelDataplane({ transport });
  const events: DataplaneEvent[] = [];
  try {
    const sub = dp.subscribe({ prefixes: [parseCidr('10.96.0.0/16')], links: ['br-ex'] }, (e) => events.push(e));
    await new Promise((r) => setImmediate(r));
    assert.equal(attached, 1);
    assert.equal(closed, 0, 'the subscription socket stays open');
    const unfiltered = events.filter((e) => e.kind === 'unfiltered');
    assert.equal(unfiltered.length, 1);
    assert.match((unfiltered[0] as { error: Error }).error.message, /ENOMEM|Cannot allocate/);
    sub.close();
  } finally {
    dp.close();
  }
});

/** A route message as the kernel lays it out, or shuffled and flagged as it never does. */
function synthesize(rand: () => number, near: FilterPrefix[]): Buffer {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const messages: Buffer[] = [];
  const count = rand() < 0.8 ? 1 : 2 + Math.floor(rand() * 2);
  for (let m = 0; m < count; m++) {
    const type = rand() < 0.85 ? pick([24, 25]) : pick([16, 20, 104, 26]);
    let flags = pick([0, 0x100, 0x200, 0x400, 0x500]);
    if (rand() < 0.1) flags |= 0x10; // NLM_F_DUMP_INTR
    const base = rand() < 0.8 ? pick(near) : undefined;
    const af = base ? base.af : pick([AF_INET, AF_INET6, 7]);
    const size = af === AF_INET6 ? 16 : 4;
    const length = base && rand() < 0.7 ? base.length : pick([0, 8, 16, 24, 32, 64, 111, 112, 113, 128]);
    const address = Buffer.alloc(size);
    if (base) base.bytes.copy(address, 0, 0, size);
    else for (let i = 0; i < size; i++) address[i] = Math.floor(rand() * 256);
    if (rand() < 0.5) {
      const bit = Math.floor(rand() * size * 8);
      address[bit >> 3]! ^= 0x80 >> (bit & 7);
    }
    const tableId = pick([254, 254, 254, 255, 100, 252, 1000, 510, 0]);
    const attrs: { type: number; data: Buffer }[] = [];
    const u32 = (v: number) => {
      const b = Buffer.alloc(4);
      b.writeUInt32LE(v >>> 0);
      return b;
    };
    if (rand() < 0.9) attrs.push({ type: 15, data: u32(tableId) }); // RTA_TABLE
    if (length > 0 ? rand() < 0.95 : rand() < 0.1)
      attrs.push({ type: 1, data: rand() < 0.9 ? address : address.subarray(0, pick([0, 2, 4, 8])) }); // RTA_DST
    if (rand() < 0.7) attrs.push({ type: 6, data: u32(Math.floor(rand() * 1000)) }); // RTA_PRIORITY
    if (rand() < 0.7) attrs.push({ type: 5, data: Buffer.alloc(size, 7) }); // RTA_GATEWAY
    if (rand() < 0.7) attrs.push({ type: 4, data: u32(3) }); // RTA_OIF
    if (rand() < 0.3) attrs.unshift({ type: pick([12, 20, 9]), data: Buffer.alloc(pick([0, 1, 4, 6, 8])) });
    if (rand() < 0.2) attrs.sort(() => rand() - 0.5);
    for (const a of attrs) if (rand() < 0.1) a.type |= pick([0x8000, 0x4000]);
    const body = Buffer.concat(
      attrs.map((a) => {
        const b = Buffer.alloc((4 + a.data.length + 3) & ~3);
        b.writeUInt16LE(4 + a.data.length, 0);
        b.writeUInt16LE(a.type, 2);
        a.data.copy(b, 4);
        return b;
      }),
    );
    const rtmsg = Buffer.alloc(12);
    rtmsg[0] = af;
    rtmsg[1] = length;
    // The kernel's rule: the table itself below 256, RT_TABLE_COMPAT above.
    rtmsg[4] = tableId < 256 ? tableId : 252;
    rtmsg[7] = 1;
    const header = Buffer.alloc(16);
    const total = 16 + 12 + body.length;
    header.writeUInt32LE(total, 0);
    header.writeUInt16LE(type, 4);
    header.writeUInt16LE(flags, 6);
    messages.push(Buffer.concat([header, rtmsg, body]));
  }
  return Buffer.concat(messages);
}

test('socket filter, fuzzed in the interpreter: of 200,000 datagrams in shapes the kernel never sends (several messages, DUMP_INTR, flagged, shuffled, missized), none it drops is one the reader would act on', async () => {
  const codec = await import('../../src/dataplane/codec.js');
  const sets = [
    ['10.96.0.0/16', 'fd00:10:96::/112'],
    ['10.96.0.0/16', '0.0.0.0/0', 'fd00:10:96::/112', '::/0', '10.97.3.0/24', 'fd00:10:97::/64'],
    ['::/0', '10.96.0.0/12'],
    CHUNKED_V4,
    CHUNKED_V6,
    ALL_LENGTHS,
  ];
  let dropped = 0;
  let acted = 0;
  const rand = prng(Number(process.env.GWMODE_BPF_SEED ?? 12));
  for (const watched of sets) {
    const prefixes = prefixesOf(watched);
    const program = routeSocketFilter(RT_TABLE_MAIN, prefixes)!;
    const filter = new codec.PrefixFilter(prefixes);
    const readerActs = (datagram: Buffer): boolean => {
      try {
        return codec
          .parseDatagram(datagram)
          .some(
            (m) =>
              (m.type === codec.RTM_NEWROUTE || m.type === codec.RTM_DELROUTE) &&
              filter.match(m.data) !== undefined &&
              codec.routeTable(m.data) === RT_TABLE_MAIN,
          );
      } catch {
        return true; // a decode error: the reader resyncs
      }
    };
    for (let i = 0; i < 200_000 / sets.length; i++) {
      const datagram = synthesize(rand, prefixes);
      const verdict = runClassicBpf(program, datagram);
      assert.ok(verdict === 0 || verdict === 0xffffffff, `verdict ${verdict}`);
      const acts = readerActs(datagram);
      if (acts) acted++;
      if (verdict === 0) {
        dropped++;
        assert.ok(!acts, `dropped a datagram the reader acts on (${watched.join(', ')}): ${datagram.toString('hex')}`);
      }
    }
  }
  // Not a program that keeps everything, nor a generator that never hits.
  assert.ok(dropped > 40_000, `${dropped} dropped`);
  assert.ok(acted > 10_000, `${acted} the reader acts on`);
});

const kernelModule = fileURLToPath(new URL('../../src/dataplane/kernel.js', import.meta.url));

test('with net.core.optmem_max too small for the program, the kernel refuses it (ENOMEM): the subscription says so and still reports a change of a watched route', (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({});
  try {
    // Too little for any program, enough for the socket. Per network namespace on newer
    // kernels only; on older ones the setting is global, and this test cannot run.
    try {
      ns.sysctl('net.core.optmem_max', '512');
    } catch {
      t.skip('net.core.optmem_max is not per network namespace on this kernel');
      process.stderr.write(`SKIPPED (net.core.optmem_max is not per network namespace on this kernel): ${t.name}\n`);
      return;
    }
    const script = `
      const { KernelDataplane } = await import(${JSON.stringify(kernelModule)});
      const { parseCidr } = await import(${JSON.stringify(cidrModule)});
      const { execFileSync } = await import('node:child_process');
      const dp = new KernelDataplane({});
      const events = [];
      const sub = dp.subscribe({ prefixes: [parseCidr('10.96.0.0/16')], links: [] }, (e) => events.push(e.kind === 'unfiltered' ? 'unfiltered ' + e.error.message : e.kind + ' ' + (e.prefix ?? '')));
      await dp.routes([parseCidr('10.96.0.0/16')], await dp.links());
      execFileSync('ip', ['route', 'replace', '10.96.0.0/16', 'via', '10.244.1.1', 'dev', 'ovn-k8s-mp0']);
      for (let i = 0; i < 100 && !events.some((e) => e.startsWith('route')); i++) await new Promise((r) => setTimeout(r, 20));
      sub.close();
      dp.close();
      console.log(JSON.stringify(events));
    `;
    const r = spawnSync('ip', ['netns', 'exec', ns.name, process.execPath, '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const events = JSON.parse(r.stdout) as string[];
    assert.equal(events.filter((e) => e.startsWith('unfiltered')).length, 1, events.join('; '));
    assert.match(
      events.find((e) => e.startsWith('unfiltered'))!,
      /ENOMEM/,
    );
    assert.ok(events.includes('route 10.96.0.0/16'), events.join('; '));
  } finally {
    ns.destroy();
  }
});

test('watched prefixes too many for a program of 4,096 instructions: the subscription runs without one and says so', async () => {
  const dp = new KernelDataplane({});
  const events: DataplaneEvent[] = [];
  try {
    const prefixes = Array.from({ length: 500 }, (_, i) => parseCidr(`fd00:10:${i.toString(16)}::/112`));
    const sub = dp.subscribe({ prefixes, links: [] }, (e) => events.push(e));
    await new Promise((r) => setImmediate(r));
    const unfiltered = events.filter((e) => e.kind === 'unfiltered') as Array<{ error: Error }>;
    assert.equal(unfiltered.length, 1);
    assert.match(unfiltered[0]!.error.message, /500 watched prefixes.*4,096 instructions/);
    sub.close();
  } finally {
    dp.close();
  }
});
