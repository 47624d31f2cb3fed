// planRollback's rules, one case each, matched on reason codes. Pure: no kernel.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import type { Migration } from '../../src/core/migration.js';
import { planRollback } from '../../src/core/rollback.js';
import type { InterfaceAddress, Link, NextHop, Route } from '../../src/core/route.js';
import type { Observation, OvnkubeObservation } from '../../src/core/types.js';
import { noOsRelease } from '../../src/core/platform.js';
import { seedConfig } from '../helpers/config.js';

const BR_EX: Link = { index: 2, name: 'br-ex', up: true, mtu: 1500 };
const MP0: Link = { index: 4, name: 'ovn-k8s-mp0', up: true, mtu: 1400 };
const GW0: Link = { index: 5, name: 'ovn-k8s-gw0', up: true, mtu: 1400 };
const SHARED: NextHop = { dev: 'br-ex', oif: 2, gateway: '172.18.0.1', mtu: 1400 };
const LOCAL: NextHop = { dev: 'ovn-k8s-mp0', oif: 4, gateway: '10.244.1.1', mtu: null };
const KEY = { prefix: '10.96.0.0/16', family: 4 as const, table: 254, priority: 0 };

const route = (nextHop: NextHop, priority = 0): Route => ({
  key: { ...KEY, priority },
  nextHop,
  protocol: 3,
  scope: 0,
  type: 1,
  tos: 0,
  multipath: false,
  unmodelled: [],
});
const addr = (linkIndex: number, address: string, prefixLength: number): InterfaceAddress => ({
  linkIndex,
  family: 4,
  address,
  prefixLength,
  tentative: false,
  dadFailed: false,
});

/** The rules other than rule 6 are tested on a node whose ovnkube-node is stopped, as the operator says. */
const cfg = () => ({ ...seedConfig(), ovnkubeModeCheck: 'off' as const });

/** ovnkube-node seen running this mode (the one a rollback is for: the mode before the migration). */
const runs = (mode: 'local' | 'shared' | null): OvnkubeObservation =>
  mode === null
    ? { mode: null, pid: null, id: null, detail: 'no ovnkube --init-node process', release410Plus: null, modes: [] }
    : { mode, pid: 42, id: 'pid 42 start 7', detail: null, release410Plus: null, modes: [mode] };

function observed(
  o: { routes?: Route[]; links?: Link[]; addresses?: InterfaceAddress[]; ovnkube?: OvnkubeObservation } = {},
): Observation {
  return {
    links: o.links ?? [BR_EX, MP0, GW0],
    addresses: o.addresses ?? [addr(2, '172.18.0.2', 16), addr(4, '10.244.1.2', 24)],
    routes: new Map([
      ['10.96.0.0/16', o.routes ?? [route(LOCAL)]],
      ['0.0.0.0/0', [route({ ...SHARED, mtu: null })]],
    ]),
    ovnkube: o.ovnkube ?? runs(null),
  };
}

const migration = (from: NextHop, to: NextHop, mode: 'local' | 'shared' = 'local'): Migration => ({
  mode,
  startedAt: 0,
  ovnkubeBefore: null,
  routes: [{ key: KEY, from, to }],
  restart: 'done',
  identity: 'process',
  attempts: 1,
  last: { at: 0, target: { id: 'pid 1 start 1', describe: 'pid 1' }, result: 'stopped', error: null },
  rollback: null,
  doneAt: 0,
});

const codes = (p: ReturnType<typeof planRollback>) => p.refusals.map((r) => r.code);

test('a shared-to-local migration is put back: one replace of the route the migration left, to what it was', () => {
  const p = planRollback(migration(SHARED, LOCAL), observed(), cfg());
  assert.deepEqual(codes(p), []);
  assert.equal(p.actions.length, 1);
  assert.deepEqual(p.actions[0]!.from, LOCAL);
  assert.deepEqual(p.actions[0]!.to, SHARED);
  assert.deepEqual(p.actions[0]!.key, KEY);
  assert.equal(p.actions[0]!.reason.code, 'RollingBack');
});

test('no migration on record, or one that replaced nothing: NothingToRollBack', () => {
  assert.deepEqual(codes(planRollback(null, observed(), cfg())), ['NothingToRollBack']);
  assert.deepEqual(codes(planRollback({ ...migration(SHARED, LOCAL), routes: [] }, observed(), cfg())), [
    'NothingToRollBack',
  ]);
});

test('a migration rolled back already: NothingToRollBack, also once the node is 4.10+, or of unknown release with its routes as before', () => {
  const done = { ...migration(SHARED, LOCAL), rollback: { startedAt: 0, doneAt: 1 } };
  const masq = route({ dev: 'br-ex', oif: 2, gateway: '169.254.169.4', mtu: 1400 });
  assert.deepEqual(codes(planRollback(done, observed({ routes: [route(SHARED)] }), cfg())), ['NothingToRollBack']);
  // On a 4.8/4.9 node, a route moved again since (an agent still told local repairs it) is put back again.
  assert.equal(planRollback(done, observed(), cfg()).actions.length, 1);
  assert.deepEqual(codes(planRollback(done, observed({ routes: [masq] }), cfg())), ['NothingToRollBack']);
  const unknown = seedConfig({ layout: 'auto', osRelease: noOsRelease('/host/etc/os-release', 'ENOENT') });
  assert.deepEqual(codes(planRollback(done, observed({ routes: [route(SHARED)] }), unknown)), ['NothingToRollBack']);
  // Of unknown release with the route on ovn-k8s-mp0 again: nobody can tell, as before.
  assert.deepEqual(codes(planRollback(done, observed(), unknown)), ['LayoutUnknown']);
  // Not done: the layout still refuses first.
  const begun = { ...done, rollback: { startedAt: 0, doneAt: null } };
  assert.deepEqual(codes(planRollback(begun, observed({ routes: [masq] }), cfg())), ['RoutingViaHostLayout']);
});

test('a routing-via-host node is never rolled back, whatever the journal says', () => {
  const masq = route({ dev: 'br-ex', oif: 2, gateway: '169.254.169.4', mtu: 1400 });
  const p = planRollback(migration(SHARED, LOCAL), observed({ routes: [masq] }), cfg());
  assert.deepEqual(codes(p), ['RoutingViaHostLayout']);
  assert.deepEqual(p.actions, []);
});

test('a route changed since the migration (next hop, MTU or metric), gone, doubled or multipath: refused', () => {
  for (const [routes, code] of [
    [[route({ ...LOCAL, mtu: 1300 })], 'RouteNotAsLeft'],
    [[route({ ...LOCAL, gateway: '10.244.1.9' })], 'RouteNotAsLeft'],
    [[route(LOCAL, 50)], 'RouteNotAsLeft'],
    [[], 'NoRoute'],
    [[route(LOCAL), route(SHARED, 10)], 'SeveralRoutes'],
    [[{ ...route(LOCAL), multipath: true }], 'NotOurRoute'],
  ] as const) {
    const p = planRollback(migration(SHARED, LOCAL), observed({ routes: [...routes] }), cfg());
    assert.deepEqual(codes(p), [code], JSON.stringify(routes));
    assert.deepEqual(p.actions, []);
  }
});

test('a recorded route found as it was before the migration (never replaced, or put back already) is skipped; none left: NothingToRollBack', () => {
  const p = planRollback(migration(SHARED, LOCAL), observed({ routes: [route(SHARED)] }), cfg());
  assert.deepEqual(codes(p), ['NothingToRollBack']);
  assert.deepEqual(p.actions, []);

  // An apply stopped after its first replace: only the route it replaced is put back.
  const v6Key = { prefix: 'fd00:10:96::/112', family: 6 as const, table: 254, priority: 1024 };
  const v6Shared: NextHop = { dev: 'br-ex', oif: 2, gateway: 'fd00::1', mtu: 1400 };
  const m = migration(SHARED, LOCAL);
  m.routes.push({
    key: v6Key,
    from: v6Shared,
    to: { dev: 'ovn-k8s-mp0', oif: 4, gateway: 'fd00:10:244:1::1', mtu: null },
  });
  const o = observed();
  o.routes.set('fd00:10:96::/112', [{ ...route(v6Shared, 1024), key: v6Key }]);
  const half = planRollback(m, o, cfg());
  assert.deepEqual(codes(half), []);
  assert.deepEqual(
    half.actions.map((a) => a.key.prefix),
    ['10.96.0.0/16'],
  );
});

test("a local-to-shared migration is not put back once ovn-k8s-mp0's subnet changed, nor with mp0 down or gone", () => {
  const back = migration(LOCAL, SHARED, 'shared');
  const shared = [route(SHARED)];
  assert.deepEqual(codes(planRollback(back, observed({ routes: shared }), cfg())), []);
  assert.deepEqual(
    codes(
      planRollback(
        back,
        observed({ routes: shared, addresses: [addr(2, '172.18.0.2', 16), addr(4, '10.244.7.2', 24)] }),
        cfg(),
      ),
    ),
    ['ManagementSubnetChanged'],
  );
  assert.deepEqual(
    codes(
      planRollback(
        back,
        observed({
          routes: shared,
          addresses: [addr(2, '172.18.0.2', 16), addr(4, '10.244.1.2', 25), addr(4, '10.244.1.3', 24)],
        }),
        cfg(),
      ),
    ),
    ['ManagementAddressUnusable'],
  );
  assert.deepEqual(
    codes(planRollback(back, observed({ routes: shared, links: [BR_EX, { ...MP0, up: false }] }), cfg())),
    ['ManagementLinkDown'],
  );
  const missing = planRollback(back, observed({ routes: shared, links: [BR_EX] }), cfg());
  assert.deepEqual(codes(missing), ['ManagementLinkMissing']);
  // The refusal names the route it is about.
  assert.match(missing.refusals[0]!.message, /^10\.96\.0\.0\/16: management interface ovn-k8s-mp0 does not exist$/);
});

test("a shared-to-local migration is not put back once br-ex's next hop changed (GatewayNexthopChanged), unless --gateway-nexthop still names the old one; nor from a device other than br-ex or ovn-k8s-mp0", () => {
  const back = migration(SHARED, LOCAL);
  const moved = observed();
  moved.routes.set('0.0.0.0/0', [route({ ...SHARED, gateway: '172.18.0.254', mtu: null })]);
  const p = planRollback(back, moved, cfg());
  assert.deepEqual(codes(p), ['GatewayNexthopChanged']);
  assert.match(
    p.refusals[0]!.message,
    /^10\.96\.0\.0\/16: the old next hop 172\.18\.0\.1 is not br-ex's any more \(now 172\.18\.0\.254/,
  );
  const stated = { ...cfg(), gatewayNexthop: { 4: '172.18.0.1' } };
  assert.deepEqual(planRollback(back, moved, stated).actions[0]?.to, SHARED);
  const elsewhere = migration({ ...SHARED, dev: 'eth0' }, LOCAL);
  assert.deepEqual(codes(planRollback(elsewhere, observed(), cfg())), ['NotOurRoute']);
});

test('one refusal refuses the whole rollback: no family is put back alone', () => {
  const v6Key = { prefix: 'fd00:10:96::/112', family: 6 as const, table: 254, priority: 1024 };
  const m = migration(SHARED, LOCAL);
  m.routes.push({
    key: v6Key,
    from: { dev: 'br-ex', oif: 2, gateway: 'fd00::1', mtu: 1400 },
    to: { dev: 'ovn-k8s-mp0', oif: 4, gateway: 'fd00:10:244:1::1', mtu: null },
  });
  const o = observed();
  o.routes.set('fd00:10:96::/112', []);
  const p = planRollback(m, o, cfg());
  assert.deepEqual(codes(p), ['NoRoute']);
  assert.deepEqual(p.actions, []);
});

test('a journal (of an older agent) recording a /0 is refused, whatever the routes: a default route is never put back', () => {
  // The default route as the recorded migration would have left it: via br-ex, metric 0.
  for (const [prefix, family, from, to] of [
    ['0.0.0.0/0', 4, LOCAL, { ...SHARED, mtu: null }],
    ['0.0.0.0/0', 4, SHARED, LOCAL],
    ['::/0', 6, { ...LOCAL, gateway: 'fd00:10:244:1::1' }, { ...SHARED, gateway: 'fd00::1', mtu: null }],
  ] as const) {
    const key = { prefix, family, table: 254, priority: 0 };
    const m = migration(SHARED, LOCAL);
    m.routes.push({ key, from, to });
    const o = observed();
    o.routes.set(prefix, [{ ...route(to), key }]);
    // br-ex's next hop stated: the fixture's default route may be the one via ovn-k8s-mp0.
    const p = planRollback(m, o, { ...cfg(), gatewayNexthop: { 4: '172.18.0.1' } });
    assert.deepEqual(codes(p), ['NotOurRoute'], prefix);
    assert.match(p.refusals[0]!.message, /is a default route, never a service route/);
    assert.deepEqual(p.actions, []);
  }
});

test("never against ovnkube-node: of unknown mode (none running, or none saying it) OvnkubeModeUnknown unless --ovnkube-mode-check off; a shared one keeping the mp0 route OvnkubeFallbackRoute; one of the migration's mode OvnkubeOtherMode", () => {
  const back = migration(SHARED, LOCAL);
  for (const ovnkube of [
    runs(null),
    { ...runs('shared'), mode: null, modes: [], detail: 'pid 42 has no --gateway-mode flag' },
  ])
    assert.deepEqual(codes(planRollback(back, observed({ ovnkube }), seedConfig())), ['OvnkubeModeUnknown']);
  const off = planRollback(back, observed({ ovnkube: runs(null) }), { ...seedConfig(), ovnkubeModeCheck: 'off' });
  assert.deepEqual(codes(off), []);
  assert.equal(off.actions.length, 1);
  // A shared one keeps a route via ovn-k8s-mp0 on purpose (the planner's OvnkubeFallbackRoute).
  for (const ovnkubeModeCheck of ['proc', 'off'] as const)
    assert.deepEqual(
      codes(planRollback(back, observed({ ovnkube: runs('shared') }), { ...seedConfig(), ovnkubeModeCheck })),
      ['OvnkubeFallbackRoute'],
    );
  // The mode the migration moved to, running: OvnkubeOtherMode, whatever the check says.
  for (const ovnkubeModeCheck of ['proc', 'off'] as const)
    assert.deepEqual(
      codes(planRollback(back, observed({ ovnkube: runs('local') }), { ...seedConfig(), ovnkubeModeCheck })),
      ['OvnkubeOtherMode'],
    );
});
