// A seeded fuzz of the netlink decoding path (GWMODE_NL_SEED=<seed> reproduces a run):
// 100,000 mutations of real kernel datagrams (test/fixtures/kernel-messages.hex):
// bit flips, truncations, message and attribute lengths past the end or under the
// header, garbage nested in RTA_MULTIPATH and RTA_METRICS, spliced datagrams. Each goes
// the way a message goes in kernel.ts (parseDatagram, the raw prefix
// filter, decodeRoute, decodeLink, decodeAddress) and the way an answer goes in
// kernel.ts (decodeAck). An Error is the worst allowed: no other throw,
// no hang (the test's timeout).
// Then the same mutations as notifications to a subscribed KernelDataplane over the
// fake kernel's transport: events or a resync, and afterwards the kernel's truth.
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  decodeAddress,
  decodeAck,
  decodeLink,
  decodeRoute,
  parseDatagram,
  NLMSG_DONE,
  NLMSG_ERROR,
  RTM_DELADDR,
  RTM_DELLINK,
  RTM_DELROUTE,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWROUTE,
  PrefixFilter,
} from '../../src/dataplane/codec.js';
import { KernelDataplane } from '../../src/dataplane/kernel.js';
import type { DataplaneEvent } from '../../src/dataplane/types.js';
import { parseCidr } from '../../src/net/cidr.js';
import { FakeKernel } from '../helpers/fake-transport.js';
import { bytes, fuzzCount, int, pick, prng, seedFrom, type Rng } from '../helpers/prng.js';

const FIXTURE = fileURLToPath(new URL('../../../test/fixtures/kernel-messages.hex', import.meta.url));
const SEEDS = readFileSync(FIXTURE, 'utf8')
  .split('\n')
  .filter((l) => l !== '' && !l.startsWith('#'))
  .map((l) => Buffer.from(l, 'hex'));

/** Offsets of the messages in a datagram, and of the attributes after each message's fixed header. */
function offsets(d: Buffer): { messages: number[]; attrs: number[] } {
  const messages: number[] = [];
  const attrs: number[] = [];
  for (let off = 0; off + 16 <= d.length;) {
    const len = d.readUInt32LE(off);
    if (len < 16 || len > d.length - off) break;
    messages.push(off);
    const type = d.readUInt16LE(off + 4);
    const fixed =
      type === RTM_NEWROUTE || type === RTM_DELROUTE
        ? 12
        : type === RTM_NEWLINK || type === RTM_DELLINK
          ? 16
          : type === RTM_NEWADDR || type === RTM_DELADDR
            ? 8
            : 0;
    for (let a = off + 16 + fixed; fixed && a + 4 <= Math.min(off + len, d.length);) {
      attrs.push(a);
      const alen = d.readUInt16LE(a);
      if (alen < 4) break;
      a += (alen + 3) & ~3;
    }
    off += (len + 3) & ~3;
  }
  return { messages, attrs };
}

const MUTATIONS: Record<string, (rng: Rng, d: Buffer) => Buffer> = {
  'bit flips': (rng, d) => {
    for (let i = 0, n = 1 + int(rng, 8); i < n; i++) {
      const at = int(rng, d.length);
      d[at] = d[at]! ^ (1 << int(rng, 8));
    }
    return d;
  },
  truncated: (rng, d) => d.subarray(0, int(rng, d.length)),
  'message length': (rng, d) => {
    const { messages } = offsets(d);
    if (messages.length)
      d.writeUInt32LE(pick(rng, [0, 1, 15, 16, 17, d.length + 4, 0xffffffff, int(rng, 70_000)]), pick(rng, messages));
    return d;
  },
  'attribute length': (rng, d) => {
    const { attrs } = offsets(d);
    if (attrs.length) d.writeUInt16LE(pick(rng, [0, 1, 3, 4, 5, 7, 0xffff, int(rng, 4096)]), pick(rng, attrs));
    return d;
  },
  'attribute type': (rng, d) => {
    const { attrs } = offsets(d);
    // RTA_MULTIPATH (9), RTA_METRICS (8), nested flag, RTA_TABLE (15), IFLA_IFNAME (3), IFA_FLAGS (8)...
    if (attrs.length)
      d.writeUInt16LE(
        pick(rng, [1, 3, 4, 5, 8, 9, 15, 30, 0x8008, 0x8009, 0xffff, int(rng, 65536)]),
        pick(rng, attrs) + 2,
      );
    return d;
  },
  'nested garbage': (rng, d) => {
    const { attrs } = offsets(d);
    if (!attrs.length) return d;
    const at = pick(rng, attrs);
    const alen = d.readUInt16LE(at);
    d.writeUInt16LE(pick(rng, [8, 9]), at + 2);
    bytes(rng, Math.max(0, Math.min(alen, d.length - at) - 4)).copy(d, at + 4);
    return d;
  },
  'header fields': (rng, d) => {
    const { messages } = offsets(d);
    if (!messages.length) return d;
    const m = pick(rng, messages);
    const field = pick(rng, [4, 6, 16, 17, 18, 19, 20, 21, 22, 23]);
    if (m + field + 2 <= d.length) d.writeUInt16LE(int(rng, 65536), m + field);
    return d;
  },
  spliced: (rng, d) => Buffer.concat([d.subarray(0, int(rng, d.length)), pick(rng, SEEDS).subarray(int(rng, 64))]),
  'random bytes': (rng, d) => bytes(rng, int(rng, Math.min(d.length, 512))),
};
const KINDS = Object.keys(MUTATIONS);

const PREFIXES = ['10.96.0.0/16', '10.98.0.0/16', '10.99.0.0/16', 'fd00:10:96::/112'];
const filter = new PrefixFilter(PREFIXES.map(parseCidr));

test('the seeds decode cleanly: every route, link, address, error and done of the real datagrams', () => {
  const found = new Map<string, ReturnType<typeof decodeRoute>>();
  for (const d of SEEDS) {
    for (const msg of parseDatagram(d)) {
      if (msg.type === RTM_NEWROUTE) {
        const label = filter.match(msg.data);
        const r = decodeRoute(msg.data);
        if (label) found.set(label, r);
      } else if (msg.type === RTM_NEWLINK) assert.ok(decodeLink(msg.data).name.length > 0);
      else if (msg.type === RTM_NEWADDR) decodeAddress(msg.data);
      else if (msg.type === NLMSG_ERROR) assert.ok(decodeAck(msg).errno > 0);
      else if (msg.type === NLMSG_DONE) assert.equal(decodeAck(msg).errno, 0);
    }
  }
  assert.deepEqual([...found.keys()].sort(), [...PREFIXES].sort(), 'the four watched prefixes are in the dumps');
  assert.equal(found.get('10.98.0.0/16')?.nexthops?.length, 2);
});

test(
  '100,000 mutated kernel datagrams: a decode error at worst, never another throw or a hang',
  { timeout: fuzzCount(300_000) },
  (t) => {
    const seed = seedFrom('GWMODE_NL_SEED', 1202);
    const rng = prng(seed);
    const outcome = { datagramErrors: 0, messageErrors: 0, decoded: 0, matched: 0 };
    const kinds: Record<string, number> = {};
    const decodeErrors = new Map<string, number>();
    const errorOnly = (what: string, fn: () => void): boolean => {
      try {
        fn();
        return true;
      } catch (err) {
        assert.ok(err instanceof Error, `${what}: threw a non-Error ${String(err)} (seed ${seed})`);
        const key = err.message.replace(/\d+/g, 'N').slice(0, 60);
        decodeErrors.set(key, (decodeErrors.get(key) ?? 0) + 1);
        return false;
      }
    };
    for (let i = 0, n = fuzzCount(100_000); i < n; i++) {
      const kind = pick(rng, KINDS);
      kinds[kind] = (kinds[kind] ?? 0) + 1;
      let d: Buffer = Buffer.from(pick(rng, SEEDS));
      for (let j = 0, n = 1 + int(rng, 3); j < n; j++)
        d = MUTATIONS[j === 0 ? kind : pick(rng, KINDS)]!(rng, Buffer.from(d));
      const what = `case ${i} (${kind}, seed ${seed}) ${d.toString('hex').slice(0, 96)}`;
      let messages: ReturnType<typeof parseDatagram> = [];
      if (!errorOnly(what, () => (messages = parseDatagram(d)))) {
        outcome.datagramErrors++;
        continue;
      }
      for (const msg of messages) {
        const ok = errorOnly(what, () => {
          switch (msg.type) {
            case RTM_NEWROUTE:
            case RTM_DELROUTE: {
              const label = filter.match(msg.data);
              const route = decodeRoute(msg.data);
              if (label !== undefined) outcome.matched++;
              assert.equal(typeof route.family, 'number');
              return;
            }
            case RTM_NEWLINK:
            case RTM_DELLINK:
              decodeLink(msg.data);
              return;
            case RTM_NEWADDR:
            case RTM_DELADDR:
              decodeAddress(msg.data);
              return;
            case NLMSG_ERROR:
            case NLMSG_DONE:
              decodeAck(msg);
              return;
          }
        });
        if (ok) outcome.decoded++;
        else outcome.messageErrors++;
      }
    }
    t.diagnostic(`seed ${seed}: ${JSON.stringify(outcome)}; mutations ${JSON.stringify(kinds)}`);
    t.diagnostic(`decode errors: ${JSON.stringify([...decodeErrors].sort((a, b) => b[1] - a[1]).slice(0, 12))}`);
  },
);

test(
  '20,000 mutated datagrams as notifications to a subscribed dataplane: events or a resync, never a throw; then it answers what the kernel holds',
  { timeout: fuzzCount(120_000) },
  async (t) => {
    const seed = seedFrom('GWMODE_NL_SEED', 1202) + 1;
    const rng = prng(seed);
    const prefixes = ['10.96.0.0/16', '0.0.0.0/0', 'fd00:10:96::/112', '::/0'].map(parseCidr);
    const kernel = new FakeKernel();
    const dp = new KernelDataplane({ transport: kernel, requestTimeoutMs: 5000 });
    const events: DataplaneEvent[] = [];
    const sub = dp.subscribe({ prefixes, links: ['br-ex', 'ovn-k8s-mp0'] }, (e) => events.push(e));
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    try {
      await dp.routes(prefixes, await dp.links(['br-ex', 'ovn-k8s-mp0']));
      const socket = [...kernel.sockets].find((s) => s.groups.size > 0);
      assert.ok(socket, 'the subscription socket');
      for (let i = 0, n = fuzzCount(20_000); i < n; i++) {
        let d: Buffer = Buffer.from(pick(rng, SEEDS));
        d = MUTATIONS[pick(rng, KINDS)]!(rng, d);
        socket.deliver([d]);
        if (i % 100 === 99) {
          await tick();
          // A pass now and then, as the agent makes them: after a `lost` it re-dumps.
          if (i % 1000 === 999) await dp.routes(prefixes, await dp.links(['br-ex', 'ovn-k8s-mp0']));
        }
      }
      await tick();
      // Whatever well-formed nonsense came, the next read is the kernel's truth.
      socket.deliver([Buffer.from([1, 2, 3])]);
      await tick();
      const links = await dp.links(['br-ex', 'ovn-k8s-mp0']);
      const routes = await dp.routes(prefixes, links);
      for (const p of prefixes) {
        assert.deepEqual(
          routes.get(p.text)?.map((r) => [r.nextHop.gateway, r.nextHop.oif, r.nextHop.mtu, r.key.priority]),
          kernel.mainRoutes(p.text).map((r) => [r.gateway, r.oif, r.mtu, r.priority]),
          p.text,
        );
      }
      const kinds = events.reduce<Record<string, number>>(
        (acc, e) => ((acc[e.kind] = (acc[e.kind] ?? 0) + 1), acc),
        {},
      );
      t.diagnostic(`seed ${seed}: events ${JSON.stringify(kinds)}`);
      assert.ok((kinds.lost ?? 0) > 0, 'undecodable notifications were reported as lost');
    } finally {
      sub.close();
      dp.close();
    }
  },
);
