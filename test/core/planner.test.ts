// The rules, one table row each, matched on reason codes. Pure: no kernel, no clock.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { summarize } from '../../src/core/decide.js';
import { noOsRelease, parseOsRelease } from '../../src/core/platform.js';
import { EGRESS_FIREWALL_WARNING, plan, type PlanInput } from '../../src/core/planner.js';
import type { ReasonCode } from '../../src/core/reasons.js';
import { renderNextHop, type InterfaceAddress, type Link, type Route } from '../../src/core/route.js';
import type { GatewayMode, Observation, PlannerConfig } from '../../src/core/types.js';
import { parseCidr } from '../../src/net/cidr.js';
import { rhcosOsRelease } from '../helpers/os-release.js';
import { seedConfig } from '../helpers/config.js';

const BR_EX: Link = { index: 2, name: 'br-ex', up: true, mtu: 1500 };
const MP0: Link = { index: 4, name: 'ovn-k8s-mp0', up: true, mtu: 1400 };
const GW0: Link = { index: 5, name: 'ovn-k8s-gw0', up: true, mtu: 1400 };

export function route(
  prefix: string,
  gateway: string,
  dev: string,
  mtu: number | null,
  extra: Partial<Route['key']> & Partial<Omit<Route, 'key'>> = {},
): Route {
  const oif = dev === 'br-ex' ? 2 : dev === 'ovn-k8s-mp0' ? 4 : 9;
  const { priority = 0, table = 254, ...rest } = extra;
  return {
    key: { prefix, family: prefix.includes(':') ? 6 : 4, table, priority },
    nextHop: { dev, oif, gateway, mtu },
    protocol: 3,
    scope: 0,
    type: 1,
    tos: 0,
    multipath: false,
    unmodelled: [],
    ...rest,
  };
}

const addr = (
  linkIndex: number,
  address: string,
  prefixLength: number,
  extra: Partial<InterfaceAddress> = {},
): InterfaceAddress => ({
  linkIndex,
  family: address.includes(':') ? 6 : 4,
  address,
  prefixLength,
  tentative: false,
  dadFailed: false,
  ...extra,
});

const STALE = route('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400);
const LOCAL = route('10.96.0.0/16', '10.244.1.1', 'ovn-k8s-mp0', null);
const V6 = parseCidr('fd00:10:96::/112');
/** A route via inet6 fe80::1 dev br-ex, as the dataplane reports one: no gateway of its family, the via unmodelled. */
const VIA_INET6 = (prefix: string): Route => ({
  ...route(prefix, '172.18.0.1', 'br-ex', null),
  nextHop: { dev: 'br-ex', oif: 2, gateway: null, mtu: null },
  unmodelled: ['via inet6 fe80::1'],
});

function input(o: {
  mode?: GatewayMode | null;
  ovnkube?: GatewayMode | null;
  links?: Link[];
  addresses?: InterfaceAddress[];
  service?: Route[];
  v6?: Route[];
  defaults4?: Route[];
  config?: Partial<PlannerConfig>;
  modeError?: string | null;
  suspended?: Map<string, string>;
  /** A 4.10+ flag seen on ovnkube-node's command line (OvnkubeObservation.release410Plus). */
  cmdline410?: string;
  /** ovnkube-node not placed (its namespace unreadable, or several that disagree), these modes on their command lines. */
  unplaced?: GatewayMode[];
}): PlanInput {
  const observed: Observation = {
    links: o.links ?? [BR_EX, MP0, GW0],
    addresses: o.addresses ?? [
      addr(2, '172.18.0.2', 16),
      addr(4, '10.244.1.2', 24),
      addr(4, 'fe80::1', 64),
      addr(4, 'fd00:10:244:1::2', 64),
    ],
    routes: new Map([
      ['10.96.0.0/16', o.service ?? [STALE]],
      ['0.0.0.0/0', o.defaults4 ?? [route('0.0.0.0/0', '172.18.0.1', 'br-ex', null)]],
      ['fd00:10:96::/112', o.v6 ?? []],
      ['::/0', [route('::/0', 'fd00:18::1', 'br-ex', null)]],
    ]),
    ovnkube: o.unplaced
      ? { mode: null, pid: null, id: null, detail: 'pid 43 unreadable', release410Plus: null, modes: o.unplaced }
      : o.ovnkube === null
        ? {
            mode: null,
            pid: null,
            id: null,
            detail: 'no ovnkube --init-node process in this network namespace',
            release410Plus: o.cmdline410 ?? null,
            modes: [],
          }
        : {
            mode: o.ovnkube ?? 'local',
            pid: 42,
            id: 'pid 42 start 1',
            detail: null,
            release410Plus: o.cmdline410 ?? null,
            modes: [o.ovnkube ?? 'local'],
          },
  };
  const mode = o.mode === undefined ? 'local' : o.mode;
  return {
    desired: { mode, source: { path: '/etc/mode', error: o.modeError ?? (mode === null ? 'not read yet' : null) } },
    config: seedConfig(o.config),
    observed,
    ...(o.suspended ? { suspended: o.suspended } : {}),
  };
}

const dual = { serviceCidrs: [parseCidr('10.96.0.0/16'), V6] };
const OS_RELEASE = '/host/etc/os-release';
const rhcos = (version: string) => ({ osRelease: parseOsRelease(rhcosOsRelease(version), OS_RELEASE) });
const NO_OS_RELEASE = { osRelease: noOsRelease(OS_RELEASE, 'ENOENT') };
const UBUNTU = { osRelease: parseOsRelease('NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\n', OS_RELEASE) };
const CONF_410 = {
  confEvidence: { path: '/run/ovnkube-config/ovnkube.conf', keys: ['[kubernetes] platform-type="BareMetal"'] },
};
const CONF_49 = { confEvidence: { path: '/run/ovnkube-config/ovnkube.conf', keys: [] } };
const CMDLINE_410 = '--export-ovs-metrics (pid 42)';
const cases: Array<{ name: string; in: PlanInput; phase: string; code: ReasonCode; to?: string[] }> = [
  {
    name: 'stale br-ex route, local desired and running: replace via the .1 of mp0',
    in: input({}),
    phase: 'Progressing',
    code: 'Replacing',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  { name: 'already local: converged', in: input({ service: [LOCAL] }), phase: 'Converged', code: 'InSync' },
  {
    name: 'shared desired, ovnkube-node shared, a route via mp0: its fallback, never moved',
    in: input({ mode: 'shared', ovnkube: 'shared', service: [LOCAL] }),
    phase: 'Converged',
    code: 'OvnkubeFallbackRoute',
  },
  {
    name: 'shared desired, mode check off, a route via mp0: never moved either',
    in: input({ mode: 'shared', ovnkube: null, service: [LOCAL], config: { ovnkubeModeCheck: 'off' } }),
    phase: 'Converged',
    code: 'OvnkubeFallbackRoute',
  },
  {
    name: 'shared desired, ovnkube-node still local: its restart by the rollout heals it; nothing written',
    in: input({ mode: 'shared', ovnkube: 'local', service: [LOCAL] }),
    phase: 'Waiting',
    code: 'OvnkubeOtherMode',
  },
  {
    name: 'shared desired, ovnkube-node not running: wait',
    in: input({ mode: 'shared', ovnkube: null, service: [LOCAL] }),
    phase: 'Waiting',
    code: 'OvnkubeModeUnknown',
  },
  {
    name: 'shared desired, the br-ex route via the default gateway: in sync',
    in: input({ mode: 'shared', ovnkube: 'shared' }),
    phase: 'Converged',
    code: 'InSync',
  },
  {
    name: "shared desired, its MTU differs from the agent's guess: in sync, never rewritten",
    in: input({ mode: 'shared', ovnkube: 'shared', service: [route('10.96.0.0/16', '172.18.0.1', 'br-ex', 9000)] }),
    phase: 'Converged',
    code: 'InSync',
  },
  {
    name: 'shared desired, no mtu on the route and none configured: in sync',
    in: input({
      mode: 'shared',
      ovnkube: 'shared',
      service: [route('10.96.0.0/16', '172.18.0.1', 'br-ex', null)],
      config: { mtu: null },
    }),
    phase: 'Converged',
    code: 'InSync',
  },
  {
    name: "shared desired, no MTU anywhere: in sync all the same (the MTU is ovnkube-node's)",
    in: input({ mode: 'shared', ovnkube: 'shared', links: [BR_EX, { ...MP0, mtu: null }, GW0], config: { mtu: null } }),
    phase: 'Converged',
    code: 'InSync',
  },
  {
    name: 'shared desired, via another next hop than --gateway-nexthop: reported, not rewritten',
    in: input({ mode: 'shared', ovnkube: 'shared', config: { gatewayNexthop: { 4: '172.18.0.254' } } }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: 'shared desired, br-ex missing: wait',
    in: input({ mode: 'shared', ovnkube: 'shared', links: [MP0] }),
    phase: 'Waiting',
    code: 'GatewayLinkMissing',
  },
  {
    name: 'shared desired, via another device: not ours',
    in: input({ mode: 'shared', ovnkube: 'shared', service: [route('10.96.0.0/16', '192.168.1.1', 'eth0', null)] }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: 'shared desired, release unknown, routes of the shared shape: already shared',
    in: input({ mode: 'shared', ovnkube: 'shared', config: NO_OS_RELEASE }),
    phase: 'Converged',
    code: 'AlreadyShared',
  },
  {
    name: 'shared desired on 4.10 with a route via mp0: routing-via-host, nothing',
    in: input({ mode: 'shared', ovnkube: 'shared', service: [LOCAL], config: rhcos('4.10') }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  { name: 'no desired mode yet: wait', in: input({ mode: null }), phase: 'Waiting', code: 'ModeNotRead' },
  {
    name: 'ovnkube-node not running: wait',
    in: input({ ovnkube: null }),
    phase: 'Waiting',
    code: 'OvnkubeModeUnknown',
  },
  {
    name: 'ovnkube-node in the other mode: wait',
    in: input({ ovnkube: 'shared' }),
    phase: 'Waiting',
    code: 'OvnkubeOtherMode',
  },
  {
    name: "mode check off: an ovnkube-node whose mode is not seen is taken to run the mode file's",
    in: input({ ovnkube: null, config: { ovnkubeModeCheck: 'off' } }),
    phase: 'Progressing',
    code: 'Replacing',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  {
    name: 'mode check off, ovnkube-node seen in the other mode: wait all the same',
    in: input({ ovnkube: 'shared', config: { ovnkubeModeCheck: 'off' } }),
    phase: 'Waiting',
    code: 'OvnkubeOtherMode',
  },
  {
    name: 'mode check off, an ovnkube-node not placed (namespace unreadable) running the other mode: wait all the same',
    in: input({ unplaced: ['shared'], config: { ovnkubeModeCheck: 'off' } }),
    phase: 'Waiting',
    code: 'OvnkubeOtherMode',
  },
  {
    name: 'mode check off, ovnkube processes that disagree, one in the other mode: wait all the same',
    in: input({ unplaced: ['local', 'shared'], config: { ovnkubeModeCheck: 'off' } }),
    phase: 'Waiting',
    code: 'OvnkubeOtherMode',
  },
  {
    name: "mode check off, ovnkube-node not placed but every mode seen the mode file's: replace",
    in: input({ unplaced: ['local'], config: { ovnkubeModeCheck: 'off' } }),
    phase: 'Progressing',
    code: 'Replacing',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  {
    name: 'shared desired, mode check off, an ovnkube-node not placed running local: wait all the same',
    in: input({ mode: 'shared', unplaced: ['local'], service: [LOCAL], config: { ovnkubeModeCheck: 'off' } }),
    phase: 'Waiting',
    code: 'OvnkubeOtherMode',
  },
  {
    name: 'shared desired, mode check off, ovnkube-node seen still local: wait all the same',
    in: input({ mode: 'shared', ovnkube: 'local', service: [LOCAL], config: { ovnkubeModeCheck: 'off' } }),
    phase: 'Waiting',
    code: 'OvnkubeOtherMode',
  },
  { name: 'mp0 missing: wait', in: input({ links: [BR_EX, GW0] }), phase: 'Waiting', code: 'ManagementLinkMissing' },
  {
    name: 'mp0 down: wait',
    in: input({ links: [BR_EX, { ...MP0, up: false }, GW0] }),
    phase: 'Waiting',
    code: 'ManagementLinkDown',
  },
  { name: 'br-ex missing: wait', in: input({ links: [MP0, GW0] }), phase: 'Waiting', code: 'GatewayLinkMissing' },
  {
    name: 'br-ex down: wait',
    in: input({ links: [{ ...BR_EX, up: false }, MP0, GW0] }),
    phase: 'Waiting',
    code: 'GatewayLinkDown',
  },
  {
    name: 'mp0 with two IPv4 addresses: the next hop would be a guess',
    in: input({ addresses: [addr(4, '10.244.1.2', 24), addr(4, '10.244.9.2', 24)] }),
    phase: 'Waiting',
    code: 'ManagementAddressUnusable',
  },
  {
    name: 'mp0 with a /32: no subnet',
    in: input({ addresses: [addr(4, '10.244.1.2', 32)] }),
    phase: 'Waiting',
    code: 'ManagementAddressUnusable',
  },
  {
    name: "mp0 address not the subnet's second: wait",
    in: input({ addresses: [addr(4, '10.244.1.7', 24)] }),
    phase: 'Waiting',
    code: 'ManagementAddressUnusable',
  },
  {
    name: 'mp0 IPv6 address tentative: wait',
    in: input({
      config: dual,
      v6: [route('fd00:10:96::/112', 'fd00:18::1', 'br-ex', 1400)],
      addresses: [addr(4, '10.244.1.2', 24), addr(4, 'fd00:10:244:1::2', 64, { tentative: true })],
    }),
    phase: 'Waiting',
    code: 'ManagementAddressUnusable',
  },
  {
    name: 'mp0 IPv6 address failed DAD: wait',
    in: input({
      config: dual,
      v6: [route('fd00:10:96::/112', 'fd00:18::1', 'br-ex', 1400)],
      addresses: [addr(4, '10.244.1.2', 24), addr(4, 'fd00:10:244:1::2', 64, { dadFailed: true })],
    }),
    phase: 'Waiting',
    code: 'ManagementAddressUnusable',
  },
  {
    name: 'dual-stack: both families move, each via its own .1',
    in: input({ config: dual, v6: [route('fd00:10:96::/112', 'fd00:18::1', 'br-ex', 1400)] }),
    phase: 'Progressing',
    code: 'Replacing',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0', 'via fd00:10:244:1::1 dev ovn-k8s-mp0'],
  },
  { name: 'no route at all: never created', in: input({ service: [] }), phase: 'Waiting', code: 'NoRoute' },
  {
    name: 'two routes of the prefix: ambiguous',
    in: input({ service: [STALE, route('10.96.0.0/16', '10.244.1.1', 'ovn-k8s-mp0', null, { priority: 100 })] }),
    phase: 'Waiting',
    code: 'SeveralRoutes',
  },
  {
    name: 'multipath: not ours',
    in: input({ service: [{ ...STALE, multipath: true }] }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: 'a TOS route: not ours',
    in: input({ service: [{ ...STALE, tos: 16 }] }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: 'a src the replace would drop: not ours',
    in: input({ service: [{ ...STALE, unmodelled: ['src 172.18.0.2'] }] }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: 'a link route (no gateway) on br-ex: not ours (a replace via a gateway keeping scope link is refused by the kernel)',
    in: input({ service: [{ ...STALE, scope: 253, nextHop: { ...STALE.nextHop, gateway: null } }] }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: 'an IPv6 route with no gateway on br-ex: not ours either',
    in: input({
      config: dual,
      v6: [
        {
          ...route('fd00:10:96::/112', 'fd00:18::1', 'br-ex', 1400),
          nextHop: { dev: 'br-ex', oif: 2, gateway: null, mtu: 1400 },
        },
      ],
    }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: 'via inet6 (RTA_VIA, an IPv6 next hop of an IPv4 route): not ours',
    in: input({ service: [VIA_INET6('10.96.0.0/16')] }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: 'shared: a default route via inet6 gives no next hop; the IPv4 default gateway behind it does',
    in: input({
      mode: 'shared',
      ovnkube: 'shared',
      service: [route('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400)],
      defaults4: [VIA_INET6('0.0.0.0/0'), route('0.0.0.0/0', '172.18.0.1', 'br-ex', null, { priority: 500 })],
    }),
    phase: 'Converged',
    code: 'InSync',
  },
  {
    name: 'shared: a default route via inet6 alone: no next hop, wait',
    in: input({ mode: 'shared', ovnkube: 'shared', service: [STALE], defaults4: [VIA_INET6('0.0.0.0/0')] }),
    phase: 'Waiting',
    code: 'NoDefaultRoute',
  },
  {
    name: 'via another device: not ours',
    in: input({ service: [route('10.96.0.0/16', '192.168.1.1', 'eth0', null)] }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: 'a link-local next hop that is no masquerade .4: never ours',
    in: input({ service: [route('10.96.0.0/16', '169.254.3.9', 'br-ex', 1400)], config: { layout: 'legacy' } }),
    phase: 'Waiting',
    code: 'NotOurRoute',
  },
  {
    name: '169.254.169.4 (4.10-4.13): routing-via-host, never changed',
    in: input({ service: [route('10.96.0.0/16', '169.254.169.4', 'br-ex', 1400)] }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: '169.254.0.4 (4.14+): routing-via-host, even with --layout legacy',
    in: input({ service: [route('10.96.0.0/16', '169.254.0.4', 'br-ex', 1400)], config: { layout: 'legacy' } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'fd69::4: routing-via-host, even with --layout legacy',
    in: input({ config: { ...dual, layout: 'legacy' }, v6: [route('fd00:10:96::/112', 'fd69::4', 'br-ex', 1400)] }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'a masquerade subnet from ovnkube.conf: its .4 marks routing-via-host',
    in: input({
      service: [route('10.96.0.0/16', '169.254.64.4', 'br-ex', 1400)],
      config: { layout: 'legacy', masqueradeNexthops: ['169.254.64.4'] },
    }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'no version evidence, no gw0, no mp0 route: waits',
    in: input({ links: [BR_EX, MP0], config: NO_OS_RELEASE }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'no version evidence: a leftover ovn-k8s-gw0 is no proof of 4.8/4.9',
    in: input({ config: NO_OS_RELEASE }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'no version evidence: a route via mp0 is no proof of 4.8/4.9',
    in: input({ links: [BR_EX, MP0], service: [LOCAL], config: NO_OS_RELEASE }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: "no version evidence, --layout legacy: the operator's statement acts",
    in: input({ links: [BR_EX, MP0], config: { ...NO_OS_RELEASE, layout: 'legacy' } }),
    phase: 'Progressing',
    code: 'Replacing',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  {
    name: 'RHCOS 4.8: acts',
    in: input({ links: [BR_EX, MP0], config: rhcos('4.8') }),
    phase: 'Progressing',
    code: 'Replacing',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  {
    name: 'RHCOS 4.9: acts, no gw0 needed',
    in: input({ links: [BR_EX, MP0], config: rhcos('4.9') }),
    phase: 'Progressing',
    code: 'Replacing',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  {
    name: 'RHCOS 4.10 with a leftover gw0: never changed',
    in: input({ config: rhcos('4.10') }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'RHCOS 4.10, --layout legacy: ignored, never changed',
    in: input({ config: { ...rhcos('4.10'), layout: 'legacy' } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'RHCOS 4.11, --layout legacy: never changed',
    in: input({ config: { ...rhcos('4.11'), layout: 'legacy' } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'RHCOS 4.12: never changed',
    in: input({ config: rhcos('4.12') }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'RHCOS 4.16, --layout legacy: never changed',
    in: input({ config: { ...rhcos('4.16'), layout: 'legacy' } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'RHCOS 4.7: not a release the agent knows, waits',
    in: input({ config: rhcos('4.7') }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'a non-RHCOS os-release: no evidence, waits',
    in: input({ config: UBUNTU }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'a non-RHCOS os-release, --layout legacy: acts',
    in: input({ config: { ...UBUNTU, layout: 'legacy' } }),
    phase: 'Progressing',
    code: 'Replacing',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  {
    name: "a non-RHCOS os-release that names 4.9: not RHCOS's word, waits",
    in: input({ config: { osRelease: parseOsRelease('ID=centos\nOPENSHIFT_VERSION="4.9"\n', OS_RELEASE) } }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'an os-release that names 4.10, whatever its ID: never changed',
    in: input({ config: { osRelease: parseOsRelease('ID=centos\nOPENSHIFT_VERSION="4.10"\n', OS_RELEASE) } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  ...['4.10.0-rc.1', '4.11.0-fc.3', ' 4.10', '4.10.3-x86_64'].map((v) => ({
    name: `OPENSHIFT_VERSION="${v}" (read loosely for 4.10+, whatever the ID): never changed`,
    in: input({ config: { osRelease: parseOsRelease(`ID=centos\nOPENSHIFT_VERSION="${v}"\n`, OS_RELEASE) } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout' as const,
  })),
  {
    name: 'RHCOS OPENSHIFT_VERSION="4.9.0-rc.1": 4.8/4.9 only when exact, waits',
    in: input({ config: { osRelease: parseOsRelease('ID="rhcos"\nOPENSHIFT_VERSION="4.9.0-rc.1"\n', OS_RELEASE) } }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'RHCOS with no OPENSHIFT_VERSION, VERSION_ID="4.10": never changed',
    in: input({
      config: {
        osRelease: parseOsRelease('ID="rhcos"\nVERSION_ID="4.10"\nVERSION="410.84.202201251210-0"\n', OS_RELEASE),
      },
    }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'RHCOS OPENSHIFT_VERSION="4.9" but VERSION="410.84.202201251210-0": the 4.10 build wins',
    in: input({
      config: {
        osRelease: parseOsRelease('ID="rhcos"\nOPENSHIFT_VERSION="4.9"\nVERSION="410.84.202201251210-0"\n', OS_RELEASE),
      },
    }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'RHCOS with VERSION_ID="4.9" alone: 4.8/4.9 only by OPENSHIFT_VERSION, waits',
    in: input({
      config: {
        osRelease: parseOsRelease('ID="rhcos"\nVERSION_ID="4.9"\nVERSION="49.84.202201102104-0"\n', OS_RELEASE),
      },
    }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'a non-RHCOS VERSION_ID="22.04" is not an OpenShift version: waits',
    in: input({
      config: {
        osRelease: parseOsRelease(
          'ID=ubuntu\nVERSION_ID="22.04"\nVERSION="22.04.3 LTS (Jammy Jellyfish)"\n',
          OS_RELEASE,
        ),
      },
    }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'an OPENSHIFT_VERSION that is no version: waits',
    in: input({ config: { osRelease: parseOsRelease('ID="rhcos"\nOPENSHIFT_VERSION="4.x"\n', OS_RELEASE) } }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'ovnkube.conf with platform-type (4.10+), no os-release, gw0, --layout legacy: never changed',
    in: input({ config: { ...NO_OS_RELEASE, ...CONF_410, layout: 'legacy' } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'ovnkube.conf with platform-type wins over an os-release of 4.9',
    in: input({ config: { ...rhcos('4.9'), ...CONF_410 } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'ovnkube.conf with a masquerade subnet key: never changed',
    in: input({
      config: {
        ...rhcos('4.9'),
        confEvidence: {
          path: '/run/ovnkube-config/ovnkube.conf',
          keys: ['[gateway] masquerade subnet 169.254.169.0/29'],
        },
      },
    }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'mid-upgrade: RHCOS 4.9 os-release, ovnkube-node 4.10 (--export-ovs-metrics) running local over its br-ex route: never changed',
    in: input({ cmdline410: CMDLINE_410, config: rhcos('4.9') }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'mid-upgrade, --layout legacy: the command line wins, never changed',
    in: input({ cmdline410: CMDLINE_410, config: { ...rhcos('4.9'), layout: 'legacy' } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'mid-upgrade, shared desired: never changed',
    in: input({ mode: 'shared', ovnkube: 'shared', cmdline410: CMDLINE_410, config: rhcos('4.9') }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'mid-upgrade, mode check off: the command line seen still wins',
    in: input({ cmdline410: CMDLINE_410, config: { ...rhcos('4.9'), ovnkubeModeCheck: 'off' } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'ovnkube.conf without 4.10+ keys, os-release 4.9: acts',
    in: input({ config: { ...rhcos('4.9'), ...CONF_49 } }),
    phase: 'Progressing',
    code: 'Replacing',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  {
    name: 'ovnkube.conf without 4.10+ keys, no os-release: no evidence, waits',
    in: input({ config: { ...NO_OS_RELEASE, ...CONF_49 } }),
    phase: 'Waiting',
    code: 'LayoutUnknown',
  },
  {
    name: 'no os-release, --layout routing-via-host: never changed',
    in: input({ config: { ...NO_OS_RELEASE, layout: 'routing-via-host' } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: '169.254.169.4 with no os-release: never changed',
    in: input({
      service: [route('10.96.0.0/16', '169.254.169.4', 'br-ex', 1400)],
      config: { ...NO_OS_RELEASE, layout: 'legacy' },
    }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'shared desired, 169.254.0.4: never changed',
    in: input({ mode: 'shared', ovnkube: 'shared', service: [route('10.96.0.0/16', '169.254.0.4', 'br-ex', 1400)] }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: '--layout routing-via-host never changes',
    in: input({ config: { layout: 'routing-via-host' } }),
    phase: 'Converged',
    code: 'RoutingViaHostLayout',
  },
  {
    name: 'dry run: planned, not applied',
    in: input({ config: { dryRun: true } }),
    phase: 'Waiting',
    code: 'DryRun',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  {
    name: 'a bad mode file keeps the last mode and says so',
    in: input({ modeError: 'the file is empty' }),
    phase: 'Progressing',
    code: 'ModeFileInvalid',
    to: ['via 10.244.1.1 dev ovn-k8s-mp0'],
  },
  {
    name: 'a suspended CIDR holds every CIDR back',
    in: input({
      config: dual,
      v6: [route('fd00:10:96::/112', 'fd00:18::1', 'br-ex', 1400)],
      suspended: new Map([['fd00:10:96::/112', 'set back 3 times']]),
    }),
    phase: 'Degraded',
    code: 'RepairsSuspended',
  },
];

for (const c of cases) {
  test(`planner: ${c.name}`, () => {
    const p = plan(c.in);
    const { phase } = summarize(p, { phase: null, reason: null }, c.in.suspended ?? new Map(), null);
    assert.equal(phase, c.phase, JSON.stringify(p.reasons));
    assert.ok(
      p.reasons.some((r) => r.code === c.code),
      `${c.code} in ${JSON.stringify(p.reasons)}`,
    );
    assert.deepEqual(
      p.actions.map((a) => renderNextHop(a.to)),
      c.to ?? [],
    );
    if (p.blocked) assert.deepEqual(p.actions, [], 'a blocked plan has no action');
  });
}

test('planner: a bad mode file with no valid mode before says nothing is kept, and acts on nothing', () => {
  const p = plan(input({ mode: null, modeError: 'a YAML map without kind (keys: mode)' }));
  assert.deepEqual(
    p.reasons.map((r) => r.code),
    ['ModeNotRead'],
  );
  assert.equal(
    p.reasons[0]!.message,
    'no valid mode read yet: acting on nothing (/etc/mode: a YAML map without kind (keys: mode))',
  );
  assert.doesNotMatch(p.reasons[0]!.message, /keeping|last valid/);
  assert.deepEqual(p.actions, []);
});

test('planner: the whole plan of the seed node going local', () => {
  assert.deepEqual(plan(input({})), {
    layout: 'legacy',
    platform: { release: '4.8-4.9', evidence: '/host/etc/os-release: ID=rhcos OPENSHIFT_VERSION=4.9' },
    blocked: false,
    dryRun: false,
    awaitsOvnkube: false,
    actions: [
      {
        key: { prefix: '10.96.0.0/16', family: 4, table: 254, priority: 0 },
        protocol: 3,
        scope: 0,
        type: 1,
        from: { dev: 'br-ex', oif: 2, gateway: '172.18.0.1', mtu: 1400 },
        to: { dev: 'ovn-k8s-mp0', oif: 4, gateway: '10.244.1.1', mtu: null },
        reason: {
          code: 'Replacing',
          message:
            'desired mode local: 10.96.0.0/16 goes via 172.18.0.1 dev br-ex mtu 1400, expected via 10.244.1.1 dev ovn-k8s-mp0',
        },
      },
    ],
    reasons: [
      {
        code: 'Replacing',
        message:
          'desired mode local: 10.96.0.0/16 goes via 172.18.0.1 dev br-ex mtu 1400, expected via 10.244.1.1 dev ovn-k8s-mp0',
      },
    ],
    warnings: [EGRESS_FIREWALL_WARNING],
    routes: [
      {
        cidr: '10.96.0.0/16',
        family: 4,
        observed: { dev: 'br-ex', oif: 2, gateway: '172.18.0.1', mtu: 1400 },
        multipath: false,
        expected: { dev: 'ovn-k8s-mp0', oif: 4, gateway: '10.244.1.1', mtu: null },
        inSync: false,
      },
    ],
  });
});

test('planner: a replace keeps the key, protocol, scope and type of the route it replaces', () => {
  const p = plan(
    input({ service: [route('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400, { priority: 7, protocol: 4 })] }),
  );
  const a = p.actions[0]!;
  assert.deepEqual(
    [a.key, a.protocol, a.scope, a.type],
    [{ prefix: '10.96.0.0/16', family: 4, table: 254, priority: 7 }, 4, 0, 1],
  );
});

test('planner: one blocked CIDR blocks every CIDR (no half-done dual-stack)', () => {
  const p = plan(
    input({
      config: dual,
      v6: [route('fd00:10:96::/112', 'fd00:18::1', 'br-ex', 1400)],
      addresses: [addr(4, '10.244.1.2', 24)],
    }),
  );
  assert.equal(p.blocked, true);
  assert.deepEqual(p.actions, []);
});

test('planner: a route via inet6 is named by its next hop, as a service route (NotOurRoute) and as the only default route (NoDefaultRoute)', () => {
  const service = plan(input({ service: [VIA_INET6('10.96.0.0/16')] }));
  assert.deepEqual(
    service.reasons.filter((r) => r.code === 'NotOurRoute').map((r) => r.message),
    ['10.96.0.0/16 has via inet6 fe80::1, which a replace would not carry over: not one the agent owns'],
  );
  const shared = plan(
    input({ mode: 'shared', ovnkube: 'shared', service: [STALE], defaults4: [VIA_INET6('0.0.0.0/0')] }),
  );
  assert.deepEqual(
    shared.reasons.filter((r) => r.code === 'NoDefaultRoute').map((r) => r.message),
    [
      'no IPv4 default route via br-ex to take the next hop from; skipped, no IPv4 gateway: metric 0 via inet6 fe80::1 (set --gateway-nexthop)',
    ],
  );
});

test('planner: local desired always warns about egress firewall; shared does not', () => {
  assert.deepEqual(plan(input({})).warnings, [EGRESS_FIREWALL_WARNING]);
  assert.deepEqual(plan(input({ mode: 'shared', ovnkube: 'shared' })).warnings, []);
});

test('planner: shared desired, an MTU other than the guess is a warning that names both', () => {
  const p = plan(
    input({ mode: 'shared', ovnkube: 'shared', service: [route('10.96.0.0/16', '172.18.0.1', 'br-ex', 9000)] }),
  );
  assert.deepEqual([p.actions, p.routes[0]?.inSync], [[], true]);
  assert.deepEqual(p.warnings, [
    "10.96.0.0/16 carries mtu 9000, the agent expected 1400 (--mtu, ovnkube.conf or ovn-k8s-mp0's link MTU): ovnkube-node sets it; left as it is",
  ]);
});

test('planner: shared desired never plans an action, whatever the routes (a dry run neither)', () => {
  for (const service of [
    [LOCAL],
    [STALE],
    [route('10.96.0.0/16', '172.18.0.9', 'br-ex', 1)],
    [route('10.96.0.0/16', '10.244.1.9', 'ovn-k8s-mp0', 1400)],
  ]) {
    for (const ovnkube of ['local', 'shared', null] as const) {
      for (const config of [{}, NO_OS_RELEASE, { layout: 'legacy' as const }, { dryRun: true }]) {
        assert.deepEqual(plan(input({ mode: 'shared', ovnkube, service, config })).actions, []);
      }
    }
  }
});

test('planner: the plan says the release and the evidence that decided it', () => {
  const at = (config: Partial<PlannerConfig>) => plan(input({ config })).platform;
  assert.deepEqual(at(rhcos('4.9')), {
    release: '4.8-4.9',
    evidence: '/host/etc/os-release: ID=rhcos OPENSHIFT_VERSION=4.9',
  });
  assert.deepEqual(at({ ...rhcos('4.10'), layout: 'legacy' }), {
    release: '4.10+',
    evidence: '/host/etc/os-release: ID=rhcos OPENSHIFT_VERSION=4.10; --layout legacy ignored',
  });
  assert.deepEqual(at({ ...NO_OS_RELEASE, ...CONF_410 }), {
    release: '4.10+',
    evidence:
      '/run/ovnkube-config/ovnkube.conf has [kubernetes] platform-type="BareMetal" (rendered by the 4.10+ network operator only)',
  });
  assert.deepEqual(plan(input({ cmdline410: CMDLINE_410, config: rhcos('4.9') })).platform, {
    release: '4.10+',
    evidence:
      "ovnkube-node's command line has --export-ovs-metrics (pid 42), rendered by the 4.10+ network operator only",
  });
  assert.deepEqual(at({ ...NO_OS_RELEASE, layout: 'legacy' }), {
    release: 'unknown',
    evidence:
      "--layout legacy, stated by the operator (/host/etc/os-release: ENOENT; no --ovnkube-config to look at; no service route via a masquerade next hop; no 4.10+ flag on ovnkube-node's command line)",
  });
  assert.equal(at(NO_OS_RELEASE).release, 'unknown');
});

test('planner: LayoutUnknown says what was looked at, that gw0 and a mp0 route prove nothing, and how to state it', () => {
  const p = plan(input({ service: [LOCAL], config: UBUNTU }));
  const message = p.reasons.find((r) => r.code === 'LayoutUnknown')?.message ?? '';
  assert.match(message, /ID=ubuntu OPENSHIFT_VERSION=\(none\)/);
  assert.match(
    message,
    /link ovn-k8s-gw0 exists and 10\.96\.0\.0\/16 goes via ovn-k8s-mp0, which 4\.10 nodes show too: no proof/,
  );
  assert.match(message, /--layout legacy/);
});

test('planner: a multipath route is reported as such, never as a next hop of nothing', () => {
  const p = plan(
    input({ service: [{ ...STALE, nextHop: { dev: null, oif: null, gateway: null, mtu: null }, multipath: true }] }),
  );
  assert.deepEqual([p.routes[0]?.multipath, p.routes[0]?.observed], [true, null]);
});

test('planner: a node of no known release names it first (as rollback does: only the operator can state it), ovnkube-node in the other mode second', () => {
  const p = plan(input({ links: [BR_EX, MP0], ovnkube: 'shared', config: NO_OS_RELEASE }));
  assert.deepEqual(
    p.reasons.map((r) => r.code),
    ['LayoutUnknown', 'OvnkubeOtherMode'],
  );
  assert.equal(summarize(p, { phase: null, reason: null }, new Map(), null).phase, 'Waiting');
});
