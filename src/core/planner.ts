// The rules (../shared/notes/domain.md), as one pure function: observation,
// configuration and the suspended repairs in, plan out. No I/O, no clock. Every
// "no" carries a typed reason, because an agent that refuses must say why.
//
// What the planner guarantees, whatever it is given:
//  1. It only plans replaces of main-table routes whose destination is exactly a
//     service CIDR, and only of a route that exists, by its key (destination, table,
//     priority): nothing is ever deleted or created.
//  2. A replace keeps the route's key, protocol, scope and type.
//  3. It plans every CIDR or none: a precondition failing for one CIDR, or one CIDR
//     whose repairs are suspended, holds back all of them (a half-done dual-stack
//     migration is worse than none).
//  4. It never changes a node of the routing-via-host layout (OpenShift 4.10+), where
//     a service route via br-ex is correct in both modes, whatever --layout says:
//     a service route via the gateway interface to a masquerade next hop marks it.
//  5. It never touches a route whose next hop is link-local (169.254.0.0/16,
//     fd69::/16), nor one without a gateway: no 4.8/4.9 service route ever has either.
import { addressInSubnet, maskBytes, parseAddress, parseCidr, type Cidr, type Family } from '../net/cidr.js';
import { reason, type Reason } from './reasons.js';
import { renderNextHop, RT_TABLE_MAIN, RTN_UNICAST, sameNextHop, type InterfaceAddress, type Link, type NextHop, type Route, type Watched } from './route.js';
import type { DesiredMode, Layout, Observation, Plan, PlannerConfig, ReplaceAction, RouteStatus } from './types.js';

/** 4.8/4.9 local mode creates this link (on the br-local bridge). */
export const LEGACY_LOCAL_GATEWAY_LINK = 'ovn-k8s-gw0';
/** The .4 of the default masquerade subnets: 4.10-4.13, 4.14+ new installs, IPv6. */
export const ROUTING_VIA_HOST_NEXTHOPS = ['169.254.169.4', '169.254.0.4', 'fd69::4'];
const LINK_LOCAL_NEXTHOPS = [parseCidr('169.254.0.0/16'), parseCidr('fd69::/16')];
export const EGRESS_FIREWALL_WARNING =
  'egress firewall cannot be repaired per node: its ACLs live in the OVN northbound database';

export const DEFAULT_ROUTE: Record<Family, string> = { 4: '0.0.0.0/0', 6: '::/0' };

export interface PlanInput {
  desired: DesiredMode;
  config: PlannerConfig;
  observed: Observation;
  /** CIDRs whose repairs are suspended (see fights.ts), with why. */
  suspended?: ReadonlyMap<string, string>;
}

/** The prefixes and links the agent observes and wakes on: defined once, used by both. */
export function watchedOf(config: PlannerConfig): Watched {
  const families = [...new Set(config.serviceCidrs.map((c) => c.family))].sort();
  return {
    prefixes: [...config.serviceCidrs, ...families.map((f) => parseCidr(DEFAULT_ROUTE[f]))],
    links: [config.gatewayInterface, config.managementInterface, LEGACY_LOCAL_GATEWAY_LINK],
  };
}

function inCidr(address: string, cidr: Cidr): boolean {
  try {
    const a = parseAddress(address);
    return a.family === cidr.family && maskBytes(a.bytes, cidr.length).equals(cidr.bytes);
  } catch {
    return false;
  }
}

// Asked for every owned route of every plan (101 CIDRs: 101 parses per pass); the
// answer depends on the text alone, so it is remembered (a bounded table, a pure memo).
const linkLocalSeen = new Map<string, boolean>();
function isLinkLocalNexthop(gateway: string | null): boolean {
  if (gateway === null) return false;
  let answer = linkLocalSeen.get(gateway);
  if (answer === undefined) {
    answer = LINK_LOCAL_NEXTHOPS.some((c) => inCidr(gateway, c));
    if (linkLocalSeen.size >= 1024) linkLocalSeen.clear();
    linkLocalSeen.set(gateway, answer);
  }
  return answer;
}

function findLink(links: Link[], name: string): Link | undefined {
  return links.find((l) => l.name === name);
}

function serviceRoutes(input: PlanInput): Route[] {
  return input.config.serviceCidrs.flatMap((c) => input.observed.routes.get(c.text) ?? []);
}

export function detectLayout(input: PlanInput): { layout: Layout; why: string } {
  const { config, observed } = input;
  const masquerade = new Set([...ROUTING_VIA_HOST_NEXTHOPS, ...config.masqueradeNexthops]);
  const viaMasquerade = serviceRoutes(input).find(
    (r) => r.nextHop.dev === config.gatewayInterface && r.nextHop.gateway !== null && masquerade.has(r.nextHop.gateway),
  );
  // Before --layout: the flag must never turn the 4.10+ protection off.
  if (viaMasquerade) {
    return { layout: 'routing-via-host', why: `${viaMasquerade.key.prefix} goes via ${viaMasquerade.nextHop.gateway} dev ${config.gatewayInterface} (4.10+ layout)` };
  }
  if (config.layout !== 'auto') return { layout: config.layout, why: `--layout ${config.layout}` };
  if (findLink(observed.links, LEGACY_LOCAL_GATEWAY_LINK)) {
    return { layout: 'legacy', why: `link ${LEGACY_LOCAL_GATEWAY_LINK} exists (4.8/4.9 local gateway)` };
  }
  const viaMp0 = serviceRoutes(input).find((r) => r.nextHop.dev === config.managementInterface);
  if (viaMp0) return { layout: 'legacy', why: `${viaMp0.key.prefix} goes via ${config.managementInterface} (4.8/4.9 local mode)` };
  return { layout: 'unknown', why: '' };
}

/**
 * The local-mode next hop: ovn-k8s-mp0 holds the node subnet's second address and the
 * OVN router port its first. Anything else (no address, two, a host route, an IPv6
 * address still in DAD or failed it, an address that is not the .2) and the next hop
 * would be a guess: refuse.
 */
export function managementNexthop(link: Link, family: Family, addresses: InterfaceAddress[]): { via: string } | { blocked: Reason } {
  const name = link.name;
  const mine = addresses.filter((a) => a.linkIndex === link.index && a.family === family && !(family === 6 && /^fe[89ab]/i.test(a.address)));
  const unusable = (why: string) => ({ blocked: reason('ManagementAddressUnusable', `management interface ${name}: ${why}`) });
  if (mine.length === 0) return unusable(`no IPv${family} address`);
  if (mine.length > 1) return unusable(`${mine.length} IPv${family} addresses (${mine.map((a) => `${a.address}/${a.prefixLength}`).join(', ')}): cannot tell the node subnet`);
  const a = mine[0]!;
  if (a.tentative) return unusable(`${a.address} is tentative (IPv6 duplicate address detection still running)`);
  if (a.dadFailed) return unusable(`${a.address} failed duplicate address detection`);
  const bits = family === 4 ? 32 : 128;
  if (a.prefixLength >= bits - 1) return unusable(`${a.address}/${a.prefixLength} has no subnet to take a next hop from`);
  const ip = parseAddress(a.address);
  const second = addressInSubnet(ip, a.prefixLength, 2);
  if (!second.bytes.equals(ip.bytes)) {
    return unusable(`${a.address}/${a.prefixLength} is not the subnet's second address (OVN-Kubernetes gives the management port ${second.text})`);
  }
  return { via: addressInSubnet(ip, a.prefixLength, 1).text };
}

/** The next hop a service route of this family must have in the desired mode. */
function expectedNexthop(mode: 'local' | 'shared', family: Family, input: PlanInput): { expected: NextHop } | { blocked: Reason } {
  const { config, observed } = input;
  // The gateway interface must be present and up in both modes: without br-ex the
  // node is not in a state anyone should be moving routes in.
  const gateway = findLink(observed.links, config.gatewayInterface);
  if (!gateway) return { blocked: reason('GatewayLinkMissing', `gateway interface ${config.gatewayInterface} does not exist`) };
  if (!gateway.up) return { blocked: reason('GatewayLinkDown', `gateway interface ${config.gatewayInterface} is down`) };
  const mp0 = findLink(observed.links, config.managementInterface);
  if (mode === 'local') {
    const name = config.managementInterface;
    if (!mp0) return { blocked: reason('ManagementLinkMissing', `management interface ${name} does not exist`) };
    if (!mp0.up) return { blocked: reason('ManagementLinkDown', `management interface ${name} is down`) };
    const hop = managementNexthop(mp0, family, observed.addresses);
    if ('blocked' in hop) return hop;
    return { expected: { dev: name, oif: mp0.index, gateway: hop.via, mtu: null } };
  }
  const name = config.gatewayInterface;
  let via = config.gatewayNexthop[family];
  const defaults = (observed.routes.get(DEFAULT_ROUTE[family]) ?? []).filter((r) => r.nextHop.dev === name);
  if (!via) {
    // The default route in use: the lowest metric. One with no gateway of its family (a link
    // route, or `via inet6` on an IPv4 route: RTA_VIA, BGP unnumbered) gives no next hop.
    const best = defaults.filter((r) => r.nextHop.gateway !== null).sort((a, b) => a.key.priority - b.key.priority)[0];
    via = best?.nextHop.gateway ?? undefined;
  }
  if (!via) {
    const skipped = defaults.map((r) => `metric ${r.key.priority} ${r.unmodelled.find((u) => u.startsWith('via ')) ?? renderNextHop(r.nextHop)}`);
    const why = skipped.length > 0 ? `; skipped, no IPv${family} gateway: ${skipped.join(', ')}` : '';
    return { blocked: reason('NoDefaultRoute', `no IPv${family} default route via ${name} to take the next hop from${why} (set --gateway-nexthop)`) };
  }
  // Shared-mode routes carry the cluster MTU: --mtu, else ovnkube.conf, else the
  // management port's link MTU (it carries the cluster MTU). Without one, traffic
  // from the host to services could exceed the overlay's MTU: wait.
  const mtu = config.mtu ?? mp0?.mtu ?? null;
  if (mtu === null) {
    return { blocked: reason('MtuUnknown', `no MTU for shared-mode routes: no --mtu, no ovnkube.conf [default] mtu, and ${config.managementInterface} gives none`) };
  }
  return { expected: { dev: name, oif: gateway.index, gateway: via, mtu } };
}

/** Why the routes of a CIDR may not be touched, or the one route the agent owns. */
export function ownedRoute(cidr: Cidr, routes: Route[], config: PlannerConfig): { route: Route } | { blocked: Reason } {
  if (routes.length === 0) {
    return { blocked: reason('NoRoute', `no route for ${cidr.text} in the main table: ovnkube-node creates it, the agent only replaces it`) };
  }
  if (routes.length > 1) {
    const list = routes.map((r) => `metric ${r.key.priority} ${renderNextHop(r.nextHop)}`).join('; ');
    return { blocked: reason('SeveralRoutes', `${routes.length} routes for ${cidr.text} in the main table (${list}): not touching an ambiguous prefix`) };
  }
  const r = routes[0]!;
  const notOurs = (why: string) => ({ blocked: reason('NotOurRoute', `${cidr.text} ${why}: not one the agent owns`) });
  if (r.key.table !== RT_TABLE_MAIN) return notOurs(`is in table ${r.key.table}`);
  if (r.multipath) return notOurs('is a multipath route');
  if (r.type !== RTN_UNICAST) return notOurs(`is not a unicast route (type ${r.type})`);
  if (r.tos !== 0) return notOurs(`has a TOS selector (${r.tos})`);
  if (r.unmodelled.length > 0) return notOurs(`has ${r.unmodelled.join(', ')}, which a replace would not carry over`);
  if (r.nextHop.dev !== config.gatewayInterface && r.nextHop.dev !== config.managementInterface) {
    return notOurs(`goes ${renderNextHop(r.nextHop)}, neither ${config.gatewayInterface} nor ${config.managementInterface}`);
  }
  if (isLinkLocalNexthop(r.nextHop.gateway)) return notOurs(`goes via the link-local next hop ${r.nextHop.gateway}`);
  // Every 4.8/4.9 service route has a gateway; a link route (scope link) replaced by one via a
  // gateway would keep its scope, which the kernel refuses (a replace that could never work).
  if (r.nextHop.gateway === null) return notOurs(`goes ${renderNextHop(r.nextHop)}, with no gateway (a link route)`);
  return { route: r };
}

export function plan(input: PlanInput): Plan {
  const { desired, config, observed } = input;
  const suspended = input.suspended ?? new Map<string, string>();
  const reasons: Reason[] = [];
  const warnings = desired.mode === 'local' ? [EGRESS_FIREWALL_WARNING] : [];
  const observedOf = (cidr: Cidr): NextHop | null => {
    const routes = observed.routes.get(cidr.text) ?? [];
    return routes.length === 1 ? routes[0]!.nextHop : null;
  };
  const statusOf = (cidr: Cidr, expected: NextHop | null, ok: boolean): RouteStatus => {
    const routes = observed.routes.get(cidr.text) ?? [];
    const multipath = routes.length === 1 && routes[0]!.multipath;
    return { cidr: cidr.text, family: cidr.family, observed: multipath ? null : observedOf(cidr), multipath, expected, inSync: ok };
  };
  const { layout, why: layoutWhy } = detectLayout(input);
  const done = (why: Reason[], blocked: boolean, inSync = false): Plan => ({
    layout,
    actions: [],
    reasons: [...reasons, ...why],
    blocked,
    warnings,
    routes: config.serviceCidrs.map((c) => statusOf(c, null, inSync)),
  });

  if (desired.mode === null) {
    return done([reason('ModeNotRead', `no valid desired mode yet (${desired.source.path}: ${desired.source.error ?? 'not read yet'})`)], true);
  }
  if (desired.source.error) {
    reasons.push(reason('ModeFileInvalid', `keeping the last valid desired mode "${desired.mode}": ${desired.source.path}: ${desired.source.error}`));
  }
  if (layout === 'routing-via-host') {
    const why = `routing-via-host layout (${layoutWhy}): service routes via ${config.gatewayInterface} are correct in both modes; nothing to change`;
    return done([reason('RoutingViaHostLayout', why)], false, true);
  }

  const blocked: Reason[] = [];
  // ovnkube-node in the other mode first: until the operator's rollout reaches a shared-mode
  // 4.8/4.9 node it has no ovn-k8s-gw0, so its layout is unknown for a reason that will pass.
  if (config.ovnkubeModeCheck === 'proc') {
    const o = observed.ovnkube;
    if (o.mode === null) blocked.push(reason('OvnkubeModeUnknown', `ovnkube-node's gateway mode is unknown: ${o.detail ?? 'no ovnkube --init-node process'}`));
    else if (o.mode !== desired.mode) {
      blocked.push(
        reason('OvnkubeOtherMode', `ovnkube-node (pid ${o.pid}) runs --gateway-mode ${o.mode}, desired ${desired.mode}: waiting for the cluster network operator to roll ovnkube-node out`),
      );
    }
  }

  if (layout === 'unknown') {
    blocked.push(
      reason(
        'LayoutUnknown',
        `cannot tell the node's layout: no ${LEGACY_LOCAL_GATEWAY_LINK} link and no service route via ${config.managementInterface} or a masquerade next hop; set --layout legacy if this is a 4.8/4.9 node`,
      ),
    );
  }

  const statuses: RouteStatus[] = [];
  const actions: ReplaceAction[] = [];
  const held: Reason[] = [];
  // One answer per family: it depends on the links, addresses and default routes only.
  const byFamily = new Map<Family, ReturnType<typeof expectedNexthop>>();
  const expectedFor = (family: Family) => {
    const known = byFamily.get(family);
    if (known) return known;
    const found = expectedNexthop(desired.mode!, family, input);
    byFamily.set(family, found);
    return found;
  };
  for (const cidr of config.serviceCidrs) {
    const result = expectedFor(cidr.family);
    if ('blocked' in result) {
      blocked.push({ ...result.blocked });
      statuses.push(statusOf(cidr, null, false));
      continue;
    }
    const { expected } = result;
    const owned = ownedRoute(cidr, observed.routes.get(cidr.text) ?? [], config);
    if ('blocked' in owned) {
      blocked.push(owned.blocked);
      statuses.push(statusOf(cidr, expected, false));
      continue;
    }
    const route = owned.route;
    const ok = sameNextHop(route.nextHop, expected);
    statuses.push(statusOf(cidr, expected, ok));
    if (ok) continue;
    const why = suspended.get(cidr.text);
    if (why !== undefined) {
      held.push(reason('RepairsSuspended', why));
      continue;
    }
    actions.push({
      key: route.key,
      protocol: route.protocol,
      scope: route.scope,
      type: route.type,
      from: route.nextHop,
      to: expected,
      reason: reason('Replacing', `desired mode ${desired.mode}: ${cidr.text} goes ${renderNextHop(route.nextHop)}, expected ${renderNextHop(expected)}`),
    });
  }
  const mtuWarning = mtuMismatch(config, observed.links);
  if (mtuWarning) warnings.push(mtuWarning);

  const base = { layout, warnings, routes: statuses };
  if (blocked.length > 0) {
    // A shared node whose routes already have the shared shape needs nothing in any
    // layout: say so instead of waiting on a layout that does not matter.
    if (layout === 'unknown' && blocked.length === 1 && desired.mode === 'shared' && statuses.every((s) => s.inSync)) {
      return { ...base, actions: [], blocked: false, reasons: [...reasons, reason('AlreadyShared', 'service routes already have the shared-mode shape')] };
    }
    return { ...base, actions: [], blocked: true, reasons: [...reasons, ...blocked, ...held] };
  }
  // Guarantee 3: a suspended CIDR holds the others back too.
  if (held.length > 0) return { ...base, actions: [], blocked: false, reasons: [...reasons, ...held] };
  if (actions.length === 0) {
    return { ...base, actions, blocked: false, reasons: [...reasons, reason('InSync', `service routes match desired mode ${desired.mode}`)] };
  }
  if (config.dryRun) {
    const dry = reason('DryRun', `dry run: ${actions.length} replace(s) planned, not applied`);
    return { ...base, actions, blocked: false, reasons: [...reasons, dry, ...actions.map((a) => a.reason)] };
  }
  return { ...base, actions, blocked: false, reasons: [...reasons, ...actions.map((a) => a.reason)] };
}

function mtuMismatch(config: PlannerConfig, links: Link[]): string | undefined {
  const mp0 = findLink(links, config.managementInterface);
  if (config.mtu === null || mp0?.mtu == null || mp0.mtu === config.mtu) return undefined;
  return `the configured MTU ${config.mtu} differs from ${config.managementInterface}'s link MTU ${mp0.mtu}: check the cluster MTU`;
}
