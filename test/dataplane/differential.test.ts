// Differential test: routes() against `ip -j route show table main exact PREFIX` on a
// few hundred random prefixes of both families (seeded, so a failure reproduces:
// GWMODE_DIFF_SEED=<seed>), with several metrics, MTUs, protocols, route types and
// multipath routes, some prefixes also in the local table or in table 100 behind
// policy rules, some with no main-table route, some shadowed by a more specific
// route of the same network address. Every field must agree on every prefix.
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { prng } from '../helpers/prng.js';
import { seedNode, skipWithoutKernel, type Netns } from '../helpers/netns.js';
import { Probe } from '../helpers/probe-client.js';
import { addressFromBytes, maskBytes, parseCidr } from '../../src/net/cidr.js';
import type { Route } from '../../src/core/route.js';

const SEED = Number(process.env.GWMODE_DIFF_SEED ?? 0x5eed);
const PER_FAMILY = 150;

interface Plan {
  prefixes: string[];
  v4: string[];
  v6: string[];
}

/** The `ip -batch` lines of each family and the prefixes to compare. */
function plan(random: () => number): Plan {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const chance = (p: number) => random() < p;
  const lines = { 4: [] as string[], 6: [] as string[] };
  const prefixes = new Set<string>();
  const gateways: Record<4 | 6, Array<[string, string]>> = {
    4: [
      ['172.18.0.1', 'br-ex'],
      ['172.18.0.9', 'br-ex'],
      ['10.244.1.1', 'ovn-k8s-mp0'],
    ],
    6: [
      ['fd00:172:18::1', 'br-ex'],
      ['fd00:172:18::9', 'br-ex'],
      ['fd00:10:244:1::1', 'ovn-k8s-mp0'],
    ],
  };

  function randomPrefix(family: 4 | 6): string {
    const bytes = Buffer.alloc(family === 4 ? 4 : 16);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
    if (family === 4) bytes[0] = pick([100, 198, 203]);
    else bytes.writeUInt16BE(pick([0xfd10, 0xfd20, 0x2001]), 0);
    const length = family === 4 ? 8 + Math.floor(random() * 25) : 16 + Math.floor(random() * 113);
    return `${addressFromBytes(maskBytes(bytes, length)).text}/${length}`;
  }

  function mainRoutes(family: 4 | 6, prefix: string): void {
    const metrics = family === 4 ? [0, 5, 100, 1024, 4096] : [5, 100, 1024, 4096];
    const count = 1 + Math.floor(random() * 3);
    const used = new Set<number>();
    for (let i = 0; i < count; i++) {
      const metric = pick(metrics.filter((m) => !used.has(m)));
      used.add(metric);
      const [gw, dev] = pick(gateways[family]);
      const kind = pick(['via', 'via', 'via', 'dev', 'special', 'multipath', 'tos'] as const);
      const proto = pick(['', '', ' proto static', ' proto 77']);
      const mtu = pick(['', '', ' mtu 1400', ' mtu 9000']);
      if (kind === 'via') lines[family].push(`route add ${prefix} via ${gw} dev ${dev}${mtu}${proto} metric ${metric}`);
      else if (kind === 'dev') lines[family].push(`route add ${prefix} dev ${dev} scope link${proto} metric ${metric}`);
      else if (kind === 'special')
        lines[family].push(
          `route add ${pick(['blackhole', 'unreachable', 'prohibit', 'throw'])} ${prefix}${proto} metric ${metric}`,
        );
      else if (kind === 'multipath')
        lines[family].push(
          `route add ${prefix}${proto} metric ${metric} nexthop via ${gateways[family][0]?.[0]} dev br-ex nexthop via ${gateways[family][2]?.[0]} dev ovn-k8s-mp0`,
        );
      else if (family === 4) lines[4].push(`route add ${prefix} tos 0x10 via ${gw} dev ${dev}${mtu} metric ${metric}`);
      else lines[6].push(`route add ${prefix} via ${gw} dev ${dev} metric ${metric}`);
    }
  }

  for (const family of [4, 6] as const) {
    for (let n = 0; n < PER_FAMILY; n++) {
      const prefix = randomPrefix(family);
      if (prefixes.has(prefix)) continue;
      prefixes.add(prefix);
      if (chance(0.9)) mainRoutes(family, prefix);
      if (chance(0.25)) {
        const [gw, dev] = pick(gateways[family]);
        lines[family].push(`route add ${prefix} via ${gw} dev ${dev} table 100`);
        if (chance(0.5)) lines[family].push(`rule add to ${prefix} table 100`);
      }
      if (chance(0.15)) lines[family].push(`route add local ${prefix} dev lo table local`);
      const { length } = parseCidr(prefix);
      const longer = length + (family === 4 ? 4 : 8);
      if (chance(0.15) && longer <= (family === 4 ? 32 : 128)) {
        const shadow = `${prefix.split('/')[0]}/${longer}`;
        if (!prefixes.has(shadow)) {
          prefixes.add(shadow);
          const [gw, dev] = pick(gateways[family]);
          lines[family].push(`route add ${shadow} via ${gw} dev ${dev}`);
        }
      }
    }
  }
  // The seed's routes, the kernel's own (link routes, per-link fe80::/64), the
  // local table's favourites, and a main-table 127.0.0.0/8 the local one shadows.
  lines[4].push('route add 127.0.0.0/8 via 172.18.0.1 dev br-ex');
  for (const p of [
    '127.0.0.0/8',
    '0.0.0.0/0',
    '10.96.0.0/16',
    '172.18.0.0/16',
    '10.244.1.0/24',
    '::/0',
    'fd00:10:96::/112',
    'fd00:172:18::/64',
    'fe80::/64',
    'ff00::/8',
  ]) {
    prefixes.add(p);
  }
  return { prefixes: [...prefixes], v4: lines[4], v6: lines[6] };
}

const TYPES: Record<number, string> = {
  1: 'unicast',
  2: 'local',
  3: 'broadcast',
  6: 'blackhole',
  7: 'unreachable',
  8: 'prohibit',
  9: 'throw',
};
const PROTOCOLS: Record<number, string> = { 2: 'kernel', 3: 'boot', 4: 'static' };
const SCOPES: Record<number, string> = { 0: 'global', 200: 'site', 253: 'link', 254: 'host', 255: 'nowhere' };

interface IpRoute {
  type: string;
  dst: string;
  gateway?: string;
  dev?: string;
  protocol: string;
  scope: string;
  metric?: number;
  tos?: string;
  metrics?: Array<{ mtu?: number }>;
  nexthops?: unknown[];
}

function fromIp(r: IpRoute): string {
  const multipath = r.nexthops !== undefined;
  return JSON.stringify({
    type: r.type,
    gateway: multipath ? null : (r.gateway ?? null),
    dev: multipath ? null : (r.dev ?? null),
    metric: r.metric ?? 0,
    mtu: r.metrics?.find((m) => m.mtu !== undefined)?.mtu ?? null,
    protocol: r.protocol,
    scope: r.scope,
    tos: r.tos ?? null,
    multipath,
  });
}

function fromDataplane(r: Route): string {
  return JSON.stringify({
    type: TYPES[r.type] ?? String(r.type),
    gateway: r.nextHop.gateway,
    dev: r.nextHop.dev,
    metric: r.key.priority,
    mtu: r.nextHop.mtu,
    protocol: PROTOCOLS[r.protocol] ?? String(r.protocol),
    scope: SCOPES[r.scope] ?? String(r.scope),
    tos: r.tos === 0 ? null : `0x${r.tos.toString(16)}`,
    multipath: r.multipath,
  });
}

/** `ip -j route show table main exact P` for every prefix, one `ip -batch` per family. */
function ipShow(ns: Netns, prefixes: string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const family of [4, 6] as const) {
    const mine = prefixes.filter((p) => (p.includes(':') ? 6 : 4) === family);
    const text = execFileSync('ip', ['-n', ns.name, `-${family}`, '-d', '-j', '-batch', '-'], {
      input: mine.map((p) => `route show table main exact ${p}`).join('\n') + '\n',
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    const answers = text.split('\n').filter((l) => l.trim() !== '');
    assert.equal(answers.length, mine.length, 'one JSON answer per prefix');
    mine.forEach((p, i) => out.set(p, (JSON.parse(answers[i] as string) as IpRoute[]).map(fromIp).sort()));
  }
  return out;
}

function ipBatch(ns: Netns, family: 4 | 6, lines: string[]): void {
  execFileSync('ip', ['-n', ns.name, `-${family}`, '-batch', '-'], {
    input: lines.join('\n') + '\n',
    maxBuffer: 64 << 20,
  });
}

function compare(label: string, ours: Record<string, Route[]>, theirs: Map<string, string[]>): void {
  let nonEmpty = 0;
  for (const [prefix, expected] of theirs) {
    const got = ours[prefix];
    assert.ok(got, `${label}: routes() answers for ${prefix}`);
    assert.deepEqual(got.map(fromDataplane).sort(), expected, `${label}: ${prefix} (GWMODE_DIFF_SEED=${SEED})`);
    if (expected.length > 0) nonEmpty++;
  }
  assert.ok(
    nonEmpty > theirs.size / 2,
    `${label}: most prefixes have main-table routes (${nonEmpty} of ${theirs.size})`,
  );
}

test(`routes() agrees with "ip -j route show table main exact" on every field of a few hundred random prefixes (seed ${SEED})`, async (t) => {
  if (skipWithoutKernel(t)) return;
  const { prefixes, v4, v6 } = plan(prng(SEED));
  const ns = seedNode({ ipv6: true });
  try {
    ns.ip('route add 172.18.0.9 dev br-ex');
    const probe = new Probe(ns);
    try {
      ipBatch(ns, 4, v4);
      ipBatch(ns, 6, v6);
      compare('routes()', await probe.call<Record<string, Route[]>>('routes', prefixes), ipShow(ns, prefixes));
    } finally {
      await probe.close();
    }
  } finally {
    ns.destroy();
  }
});
