// The rules, one table row each. Pure: no kernel, no clock.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { EGRESS_FIREWALL_WARNING, plan, type PlanInput } from '../../src/core/planner.js';
import type { GatewayMode, Observation, PlannerConfig } from '../../src/core/types.js';
import type { KernelRoute, Link } from '../../src/dataplane/types.js';
import { parseCidr } from '../../src/net/cidr.js';
import { seedConfig } from '../helpers/config.js';

const BR_EX: Link = { index: 2, name: 'br-ex', up: true };
const MP0: Link = { index: 4, name: 'ovn-k8s-mp0', up: true };
const GW0: Link = { index: 5, name: 'ovn-k8s-gw0', up: true };

function route(prefix: string, gateway: string, dev: string, mtu: number | null, extra: Partial<KernelRoute> = {}): KernelRoute {
  const oif = dev === 'br-ex' ? 2 : dev === 'ovn-k8s-mp0' ? 4 : 9;
  return { prefix, family: prefix.includes(':') ? 6 : 4, table: 254, gateway, oif, dev, mtu, priority: 0, protocol: 3, scope: 0, type: 1, multipath: false, ...extra };
}

const STALE = route('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400);
const LOCAL = route('10.96.0.0/16', '10.244.1.1', 'ovn-k8s-mp0', null);

function input(o: {
  mode?: GatewayMode | null;
  ovnkube?: GatewayMode | null;
  links?: Link[];
  service?: KernelRoute[];
  config?: Partial<PlannerConfig>;
  modeError?: string | null;
}): PlanInput {
  const observed: Observation = {
    links: o.links ?? [BR_EX, MP0, GW0],
    addresses: [
      { linkIndex: 2, family: 4, address: '172.18.0.2', prefixLength: 16 },
      { linkIndex: 4, family: 4, address: '10.244.1.2', prefixLength: 24 },
      { linkIndex: 4, family: 6, address: 'fe80::1', prefixLength: 64 },
    ],
    routes: new Map([
      ['10.96.0.0/16', o.service ?? [STALE]],
      ['0.0.0.0/0', [route('0.0.0.0/0', '172.18.0.1', 'br-ex', null)]],
    ]),
    ovnkube: o.ovnkube === null ? { mode: null, pid: null, detail: 'no ovnkube --init-node process in this network namespace' } : { mode: o.ovnkube ?? 'local', pid: 42, detail: null },
  };
  const mode = o.mode === undefined ? 'local' : o.mode;
  return {
    desired: { mode, source: { path: '/etc/mode', error: o.modeError ?? (mode === null ? 'not read yet' : null) } },
    config: seedConfig(o.config),
    observed,
  };
}

const cases: Array<{ name: string; in: PlanInput; phase: string; reason?: RegExp; to?: string | null }> = [
  { name: 'stale br-ex route, local desired and running: replace via the .1 of mp0', in: input({}), phase: 'Progressing', to: 'via 10.244.1.1 dev ovn-k8s-mp0' },
  { name: 'already local: converged', in: input({ service: [LOCAL] }), phase: 'Converged', to: null },
  { name: 'shared desired, local route: back via the br-ex default gateway with the MTU', in: input({ mode: 'shared', ovnkube: 'shared', service: [LOCAL] }), phase: 'Progressing', to: 'via 172.18.0.1 dev br-ex mtu 1400' },
  { name: 'shared with --gateway-nexthop: that next hop', in: input({ mode: 'shared', ovnkube: 'shared', service: [LOCAL], config: { gatewayNexthop: { 4: '172.18.0.254' } } }), phase: 'Progressing', to: 'via 172.18.0.254 dev br-ex mtu 1400' },
  { name: 'shared, MTU unknown: MTU not compared', in: input({ mode: 'shared', ovnkube: 'shared', config: { mtu: null } }), phase: 'Converged', to: null },
  { name: 'no desired mode yet: wait', in: input({ mode: null }), phase: 'Waiting', reason: /no valid desired mode yet/ },
  { name: 'ovnkube-node not running: wait', in: input({ ovnkube: null }), phase: 'Waiting', reason: /no ovnkube --init-node process/ },
  { name: 'ovnkube-node in the other mode: wait', in: input({ ovnkube: 'shared' }), phase: 'Waiting', reason: /runs --gateway-mode shared, desired local/ },
  { name: 'mode check off trusts the mode file', in: input({ ovnkube: null, config: { ovnkubeModeCheck: 'off' } }), phase: 'Progressing', to: 'via 10.244.1.1 dev ovn-k8s-mp0' },
  { name: 'mp0 missing: wait', in: input({ links: [BR_EX, GW0] }), phase: 'Waiting', reason: /ovn-k8s-mp0 does not exist/ },
  { name: 'mp0 down: wait', in: input({ links: [BR_EX, { ...MP0, up: false }, GW0] }), phase: 'Waiting', reason: /ovn-k8s-mp0 is down/ },
  { name: 'br-ex missing in local: wait', in: input({ links: [MP0, GW0] }), phase: 'Waiting', reason: /gateway interface br-ex does not exist/ },
  { name: 'br-ex down in local: wait', in: input({ links: [{ ...BR_EX, up: false }, MP0, GW0] }), phase: 'Waiting', reason: /br-ex is down/ },
  { name: 'an IPv6 route via fd69::4: routing-via-host, never changed', in: (() => { const i = input({ config: { serviceCidrs: [parseCidr('fd00:10:96::/112')] } }); i.observed.routes.set('fd00:10:96::/112', [route('fd00:10:96::/112', 'fd69::4', 'br-ex', 1400)]); return i; })(), phase: 'Converged', reason: /routing-via-host layout/ },
  { name: 'br-ex down in shared: wait', in: input({ mode: 'shared', ovnkube: 'shared', service: [LOCAL], links: [{ ...BR_EX, up: false }, MP0, GW0] }), phase: 'Waiting', reason: /br-ex is down/ },
  { name: 'no IPv6 address on mp0 for an IPv6 CIDR: wait', in: (() => { const i = input({ config: { serviceCidrs: [parseCidr('fd00:10:96::/112')] } }); i.observed.routes.set('fd00:10:96::/112', [route('fd00:10:96::/112', 'fd00::1', 'br-ex', 1400)]); return i; })(), phase: 'Waiting', reason: /has no IPv6 address/ },
  { name: 'no route at all: never created', in: input({ service: [] }), phase: 'Waiting', reason: /the agent only replaces it/ },
  { name: 'two routes of the prefix: ambiguous', in: input({ service: [STALE, { ...LOCAL, priority: 100 }] }), phase: 'Waiting', reason: /2 routes/ },
  { name: 'multipath: not ours', in: input({ service: [{ ...STALE, multipath: true }] }), phase: 'Waiting', reason: /multipath/ },
  { name: 'via another device: not ours', in: input({ service: [route('10.96.0.0/16', '192.168.1.1', 'eth0', null)] }), phase: 'Waiting', reason: /not one the agent owns/ },
  { name: 'routing-via-host next hop: never changed', in: input({ service: [route('10.96.0.0/16', '169.254.169.4', 'br-ex', 1400)] }), phase: 'Converged', reason: /correct in both modes/ },
  { name: 'no gw0 and no mp0 route: unknown layout waits', in: input({ links: [BR_EX, MP0] }), phase: 'Waiting', reason: /set --layout legacy/ },
  { name: 'a route via mp0 alone marks the legacy layout', in: input({ links: [BR_EX, MP0], service: [LOCAL] }), phase: 'Converged' },
  { name: '--layout legacy overrides detection', in: input({ links: [BR_EX, MP0], config: { layout: 'legacy' } }), phase: 'Progressing', to: 'via 10.244.1.1 dev ovn-k8s-mp0' },
  { name: '--layout routing-via-host never changes', in: input({ config: { layout: 'routing-via-host' } }), phase: 'Converged', reason: /nothing to change/ },
  { name: 'dry run: planned, not applied', in: input({ config: { dryRun: true } }), phase: 'Waiting', reason: /dry run: 1 replace/, to: 'via 10.244.1.1 dev ovn-k8s-mp0' },
  { name: 'a bad mode file keeps the last mode and says so', in: input({ modeError: 'the file is empty' }), phase: 'Progressing', reason: /keeping the last valid desired mode "local"/ },
];

for (const c of cases) {
  test(`planner: ${c.name}`, () => {
    const p = plan(c.in);
    assert.equal(p.phase, c.phase, JSON.stringify(p.reasons));
    if (c.reason) assert.ok(p.reasons.some((r) => c.reason!.test(r)), JSON.stringify(p.reasons));
    if (c.to === null) assert.deepEqual(p.actions, []);
    if (c.to) {
      assert.equal(p.actions.length, 1);
      const a = p.actions[0]!;
      assert.equal(`via ${a.to.via} dev ${a.to.dev}${a.to.mtu === null ? '' : ` mtu ${a.to.mtu}`}`, c.to);
    }
    if (p.phase === 'Waiting' && !c.in.config.dryRun) assert.deepEqual(p.actions, [], 'waiting means no action');
  });
}

test('planner: a replace keeps table, priority, protocol, scope and type of the route it replaces', () => {
  const p = plan(input({ service: [{ ...STALE, priority: 7, protocol: 4, table: 254 }] }));
  const a = p.actions[0]!;
  assert.deepEqual([a.table, a.priority, a.protocol, a.scope, a.type, a.oif], [254, 7, 4, 0, 1, 4]);
});

test('planner: one blocked CIDR blocks every CIDR (no half-done dual-stack)', () => {
  const i = input({ config: { serviceCidrs: [parseCidr('10.96.0.0/16'), parseCidr('fd00:10:96::/112')] } });
  i.observed.routes.set('fd00:10:96::/112', [route('fd00:10:96::/112', 'fd00::1', 'br-ex', 1400)]);
  const p = plan(i);
  assert.equal(p.phase, 'Waiting');
  assert.deepEqual(p.actions, []);
});

test('planner: local desired always warns about egress firewall; shared does not', () => {
  assert.deepEqual(plan(input({})).warnings, [EGRESS_FIREWALL_WARNING]);
  assert.deepEqual(plan(input({ mode: 'shared', ovnkube: 'shared' })).warnings, []);
});
