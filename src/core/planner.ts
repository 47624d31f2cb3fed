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
//  4. It never changes a node of OpenShift 4.10 or later (platform.ts), where a service
//     route via br-ex is correct in both modes, whatever --layout says; and it acts only
//     on a node known to be 4.8/4.9, by its os-release or by the operator's --layout legacy.
//  5. It never touches a route whose next hop is link-local (169.254.0.0/16,
//     fd69::/16), nor one without a gateway: no 4.8/4.9 service route ever has either.
//  6. It plans replaces towards local mode only. Shared mode is ovnkube-node's: at start
//     it flushes its ovn-k8s-mp0 routes and adds the br-ex route itself, with its own MTU,
//     and keeps a route via ovn-k8s-mp0 on purpose while the cluster's topology version is
//     old (ovn-kubernetes node.go: "System may be upgrading, falling back to legacy K8S
//     Service via mp0"). With shared desired the plan only says where the node stands.
import { addressInSubnet, maskBytes, parseAddress, parseCidr, type Cidr, type Family } from '../net/cidr.js';
import { identifyPlatform, type Platform } from './platform.js';
import { reason, type Reason } from './reasons.js';
import { renderNextHop, RT_TABLE_MAIN, RTN_UNICAST, sameNextHop, type InterfaceAddress, type Link, type NextHop, type Route, type Watched } from './route.js';
import type { DesiredMode, Observation, Plan, PlannerConfig, ReplaceAction, RouteStatus } from './types.js';

/** 4.8/4.9 local mode creates this link (on the br-local bridge). */
export const LEGACY_LOCAL_GATEWAY_LINK = 'ovn-k8s-gw0';
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

/** The node's release and layout (platform.ts), from its os-release, ovnkube.conf, service routes and ovnkube-node's command line. */
export function detectLayout(input: PlanInput): Platform {
  return identifyPlatform(input.config, serviceRoutes(input), input.observed.ovnkube);
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
  // Shared-mode routes carry the cluster MTU, which ovnkube-node sets itself: the agent's
  // guess (--mtu, else ovnkube.conf, else the management port's link MTU) is only compared
  // for a warning, never a reason to write.
  const mtu = config.mtu ?? mp0?.mtu ?? null;
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
  const platform = detectLayout(input);
  const { layout } = platform;
  const found = { release: platform.release, evidence: platform.evidence };
  const done = (why: Reason[], blocked: boolean, inSync = false): Plan => ({
    layout,
    dryRun: config.dryRun,
    awaitsOvnkube: false,
    platform: found,
    actions: [],
    reasons: [...reasons, ...why],
    blocked,
    warnings,
    routes: config.serviceCidrs.map((c) => statusOf(observed, c, null, inSync)),
  });

  if (desired.mode === null) {
    return done([reason('ModeNotRead', `no valid desired mode yet (${desired.source.path}: ${desired.source.error ?? 'not read yet'})`)], true);
  }
  if (desired.source.error) {
    reasons.push(reason('ModeFileInvalid', `keeping the last valid desired mode "${desired.mode}": ${desired.source.path}: ${desired.source.error}`));
  }
  if (layout === 'routing-via-host') {
    const what = platform.release === '4.10+' ? 'OpenShift 4.10 or later' : 'routing-via-host layout';
    const why = `${what} (${platform.evidence}): service routes via ${config.gatewayInterface} are correct in both modes; nothing to change`;
    return done([reason('RoutingViaHostLayout', why)], false, true);
  }
  if (desired.mode === 'shared') return planShared(input, { layout, platform: found, reasons, warnings });

  const blocked: Reason[] = [];
  // ovnkube-node in the other mode first: it is the reason that passes by itself (the rollout).
  if (config.ovnkubeModeCheck === 'proc') {
    const o = observed.ovnkube;
    if (o.mode === null) blocked.push(reason('OvnkubeModeUnknown', `ovnkube-node's gateway mode is unknown: ${o.detail ?? 'no ovnkube --init-node process'}`));
    else if (o.mode !== desired.mode) {
      blocked.push(
        reason('OvnkubeOtherMode', `ovnkube-node (pid ${o.pid}) runs --gateway-mode ${o.mode}, desired ${desired.mode}: waiting for the cluster network operator to roll ovnkube-node out`),
      );
    }
  }

  const awaitsOvnkube = blocked.length > 0;
  if (layout === 'unknown') blocked.push(reason('LayoutUnknown', layoutUnknown(input, platform)));

  const statuses: RouteStatus[] = [];
  const actions: ReplaceAction[] = [];
  const held: Reason[] = [];
  const expectedFor = perFamily((family) => expectedNexthop('local', family, input));
  for (const cidr of config.serviceCidrs) {
    const result = expectedFor(cidr.family);
    if ('blocked' in result) {
      blocked.push({ ...result.blocked });
      statuses.push(statusOf(observed, cidr, null, false));
      continue;
    }
    const { expected } = result;
    const owned = ownedRoute(cidr, observed.routes.get(cidr.text) ?? [], config);
    if ('blocked' in owned) {
      blocked.push(owned.blocked);
      statuses.push(statusOf(observed, cidr, expected, false));
      continue;
    }
    const route = owned.route;
    const ok = sameNextHop(route.nextHop, expected);
    statuses.push(statusOf(observed, cidr, expected, ok));
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

  const base = { layout, platform: found, warnings, routes: statuses, dryRun: config.dryRun, awaitsOvnkube };
  if (blocked.length > 0) return { ...base, actions: [], blocked: true, reasons: [...reasons, ...blocked, ...held] };
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

function statusOf(observed: Observation, cidr: Cidr, expected: NextHop | null, ok: boolean): RouteStatus {
  const routes = observed.routes.get(cidr.text) ?? [];
  const multipath = routes.length === 1 && routes[0]!.multipath;
  const one = routes.length === 1 && !multipath ? routes[0]!.nextHop : null;
  return { cidr: cidr.text, family: cidr.family, observed: one, multipath, expected, inSync: ok };
}

/** One answer per family: it depends on the links, addresses and default routes only. */
function perFamily<T>(find: (family: Family) => T): (family: Family) => T {
  const known = new Map<Family, T>();
  return (family) => {
    if (!known.has(family)) known.set(family, find(family));
    return known.get(family)!;
  };
}

function layoutUnknown(input: PlanInput, platform: Platform): string {
  const { config, observed } = input;
  // Hints only: a 4.10 node may keep ovn-k8s-gw0 from 4.9 (its removal, ovn-kubernetes
  // ed422b840, is best effort) and routes services via ovn-k8s-mp0 in upgrade windows.
  const hints: string[] = [];
  if (findLink(observed.links, LEGACY_LOCAL_GATEWAY_LINK)) hints.push(`link ${LEGACY_LOCAL_GATEWAY_LINK} exists`);
  const viaMp0 = serviceRoutes(input).find((r) => r.nextHop.dev === config.managementInterface);
  if (viaMp0) hints.push(`${viaMp0.key.prefix} goes via ${config.managementInterface}`);
  const hinted = hints.length > 0 ? `; ${hints.join(' and ')}, which 4.10 nodes show too: no proof` : '';
  return `cannot tell the OpenShift release (${platform.evidence})${hinted}: the agent changes 4.8/4.9 nodes only; give --os-release the host's /etc/os-release, or state --layout legacy if this is a 4.8/4.9 node`;
}

/**
 * Desired shared: ovnkube-node's to make (guarantee 6), so no action ever. What the status says:
 *  - ovnkube-node still runs local (OvnkubeOtherMode, Waiting): the operator's rollout restarts
 *    it in shared mode, which flushes its mp0 routes and adds the br-ex route: that heals the node;
 *  - a service route via ovn-k8s-mp0 under a shared (or unchecked) ovnkube-node
 *    (OvnkubeFallbackRoute): ovnkube-node's own choice while the topology version is old, or a
 *    restart still to come. Converged, not Waiting: the agent has nothing to do and never will
 *    for it, the route carries traffic, and an upgrade window would otherwise page for a healthy
 *    node; the route shows as not in sync and the code names why;
 *  - a br-ex route via the expected next hop: in sync; an MTU other than the agent's guess is a
 *    warning (ovnkube-node sets its own);
 *  - anything else: the blocking codes, Waiting.
 */
function planShared(input: PlanInput, base: Pick<Plan, 'layout' | 'platform' | 'reasons' | 'warnings'>): Plan {
  const { config, observed } = input;
  const { layout, platform, reasons, warnings } = base;
  const blocked: Reason[] = [];
  const o = observed.ovnkube;
  let ovnkubeLocal = false;
  if (config.ovnkubeModeCheck === 'proc') {
    if (o.mode === null) blocked.push(reason('OvnkubeModeUnknown', `ovnkube-node's gateway mode is unknown: ${o.detail ?? 'no ovnkube --init-node process'}`));
    else if (o.mode === 'local') {
      ovnkubeLocal = true;
      blocked.push(
        reason(
          'OvnkubeOtherMode',
          `ovnkube-node (pid ${o.pid}) runs --gateway-mode local, desired shared: the cluster network operator's rollout restarts it in shared mode, which flushes its ${config.managementInterface} routes and adds the ${config.gatewayInterface} route itself; the agent writes nothing in shared mode`,
        ),
      );
    }
  }
  const awaitsOvnkube = blocked.length > 0;
  const fallbacks: Reason[] = [];
  const statuses: RouteStatus[] = [];
  const expectedFor = perFamily((family) => expectedNexthop('shared', family, input));
  for (const cidr of config.serviceCidrs) {
    const result = expectedFor(cidr.family);
    const expected = 'expected' in result ? result.expected : null;
    const owned = ownedRoute(cidr, observed.routes.get(cidr.text) ?? [], config);
    if ('blocked' in owned) {
      blocked.push(owned.blocked);
      statuses.push(statusOf(observed, cidr, expected, false));
      continue;
    }
    const hop = owned.route.nextHop;
    if (hop.dev === config.managementInterface) {
      statuses.push(statusOf(observed, cidr, expected, false));
      if (ovnkubeLocal) continue;
      const whose = o.mode === 'shared' ? `ovnkube-node (pid ${o.pid}) runs shared and keeps it` : 'ovnkube-node keeps it';
      fallbacks.push(
        reason(
          'OvnkubeFallbackRoute',
          `${cidr.text} goes ${renderNextHop(hop)}: ${whose} on purpose while the cluster's topology version is old (an upgrade), or until its restart in shared mode moves it to ${config.gatewayInterface}; the agent writes nothing in shared mode`,
        ),
      );
      continue;
    }
    if (expected === null) {
      blocked.push({ ...(result as { blocked: Reason }).blocked });
      statuses.push(statusOf(observed, cidr, null, false));
      continue;
    }
    if (hop.gateway !== expected.gateway) {
      blocked.push(
        reason(
          'NotOurRoute',
          `${cidr.text} goes ${renderNextHop(hop)}, not via ${expected.gateway} (${config.gatewayNexthop[cidr.family] ? '--gateway-nexthop' : `${config.gatewayInterface}'s default gateway`}): ovnkube-node sets it from [gateway] next-hop or the first default route at its start; the agent writes nothing in shared mode`,
        ),
      );
      statuses.push(statusOf(observed, cidr, expected, false));
      continue;
    }
    statuses.push(statusOf(observed, cidr, expected, true));
    if (expected.mtu !== null && hop.mtu !== expected.mtu) {
      warnings.push(`${cidr.text} carries ${hop.mtu === null ? 'no mtu' : `mtu ${hop.mtu}`}, the agent expected ${expected.mtu} (--mtu, ovnkube.conf or ${config.managementInterface}'s link MTU): ovnkube-node sets it; left as it is`);
    }
  }
  const mtuWarning = mtuMismatch(config, observed.links);
  if (mtuWarning) warnings.push(mtuWarning);
  const out = { layout, platform, warnings, routes: statuses, actions: [], dryRun: config.dryRun, awaitsOvnkube };
  if (blocked.length > 0) return { ...out, blocked: true, reasons: [...reasons, ...blocked] };
  if (fallbacks.length > 0) return { ...out, blocked: false, reasons: [...reasons, ...fallbacks] };
  if (layout === 'unknown') {
    return { ...out, blocked: false, reasons: [...reasons, reason('AlreadyShared', `service routes have the shared-mode shape ovnkube-node gives them (release unknown: ${platform.evidence})`)] };
  }
  return { ...out, blocked: false, reasons: [...reasons, reason('InSync', 'service routes match desired mode shared, as ovnkube-node makes them')] };
}

function mtuMismatch(config: PlannerConfig, links: Link[]): string | undefined {
  const mp0 = findLink(links, config.managementInterface);
  if (config.mtu === null || mp0?.mtu == null || mp0.mtu === config.mtu) return undefined;
  return `the configured MTU ${config.mtu} differs from ${config.managementInterface}'s link MTU ${mp0.mtu}: check the cluster MTU`;
}
