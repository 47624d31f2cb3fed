// The rules (docs/design.md) as one pure function: observation, configuration and the suspended
// repairs in, plan out; no I/O, no clock; every "no" carries a reason. Whatever it is given:
//  1. It plans only replaces, by key, of an existing main-table route whose destination is exactly
//     a service CIDR: nothing is ever deleted or created.
//  2. A replace keeps the route's key, protocol, scope and type.
//  3. Every CIDR or none: one CIDR failing a precondition, or suspended, holds back all (a half-done
//     dual-stack migration is worse than none).
//  4. Never a 4.10+ node (platform.ts), whatever --layout says; only one known to be 4.8/4.9, by its
//     os-release or by the operator's --layout legacy.
//  5. Never a route whose next hop is link-local (169.254.0.0/16, fd69::/16) or has no gateway.
//  6. Towards local only. Shared is ovnkube-node's: at start it flushes its ovn-k8s-mp0 routes and
//     adds the br-ex route, and keeps a route via ovn-k8s-mp0 while the topology version is old
//     (ovn-kubernetes node.go: "System may be upgrading, falling back to legacy K8S Service via mp0").
//  7. Never while ovnkube-node is seen running the other mode, whatever --ovnkube-mode-check says:
//     `off` only lets it act where ovnkube-node's mode is not seen.
import { addressInSubnet, maskBytes, parseAddress, parseCidr, type Cidr, type Family } from '../net/cidr.js';
import { identifyPlatform, type Platform } from './platform.js';
import { reason, type Reason } from './reasons.js';
import { renderNextHop, RT_TABLE_MAIN, RTN_UNICAST, sameNextHop } from './route.js';
import type { InterfaceAddress, Link, NextHop, Route, Watched } from './route.js';
import type { DesiredMode, Observation, Plan, PlannerConfig, ReplaceAction, RouteStatus } from './types.js';

/** 4.8/4.9 local mode creates this link (on br-local). */
const LEGACY_LOCAL_GATEWAY_LINK = 'ovn-k8s-gw0';
export const EGRESS_FIREWALL_WARNING =
  'egress firewall cannot be repaired per node: its ACLs live in the OVN northbound database';
const DEFAULT_ROUTE: Record<Family, Cidr> = { 4: parseCidr('0.0.0.0/0'), 6: parseCidr('::/0') };
const LINK_LOCAL = [parseCidr('169.254.0.0/16'), parseCidr('fd69::/16')];

export interface PlanInput {
  desired: DesiredMode;
  config: PlannerConfig;
  observed: Observation;
  /** CIDRs whose repairs are suspended (see fights.ts), with why. */
  suspended?: ReadonlyMap<string, string>;
}

type Blocked = { blocked: Reason };
const blocked = (code: Reason['code'], why: string): Blocked => ({ blocked: reason(code, why) });

/** The prefixes and links the agent observes and wakes on: defined once, used by both. */
export function watchedOf(config: PlannerConfig): Watched {
  const families = [...new Set(config.serviceCidrs.map((c) => c.family))].sort();
  return {
    prefixes: [...config.serviceCidrs, ...families.map((f) => DEFAULT_ROUTE[f])],
    links: [config.gatewayInterface, config.managementInterface, LEGACY_LOCAL_GATEWAY_LINK],
  };
}

const serviceRoutes = (input: PlanInput): Route[] =>
  input.config.serviceCidrs.flatMap((c) => input.observed.routes.get(c.text) ?? []);

/** The node's release and layout (platform.ts). */
export const detectLayout = (input: PlanInput): Platform =>
  identifyPlatform(input.config, serviceRoutes(input), input.observed.ovnkube);

const findLink = (links: Link[], name: string): Link | undefined => links.find((l) => l.name === name);

/** The link, present and up, or why not. */
function upLink(links: Link[], name: string, role: 'Gateway' | 'Management'): Link | Blocked {
  const link = findLink(links, name);
  const what = `${role.toLowerCase()} interface ${name}`;
  if (!link) return blocked(`${role}LinkMissing`, `${what} does not exist`);
  return link.up ? link : blocked(`${role}LinkDown`, `${what} is down`);
}

function isLinkLocal(gateway: string | null): boolean {
  if (gateway === null) return false;
  try {
    const a = parseAddress(gateway);
    return LINK_LOCAL.some((c) => a.family === c.family && maskBytes(a.bytes, c.length).equals(c.bytes));
  } catch {
    return false;
  }
}

/** The local-mode next hop: ovn-k8s-mp0 holds the node subnet's .2, the OVN router port its .1; else a guess: refuse. */
export function managementNexthop(link: Link, family: Family, addresses: InterfaceAddress[]) {
  const mine = addresses.filter(
    (a) => a.linkIndex === link.index && a.family === family && !(family === 6 && /^fe[89ab]/i.test(a.address)),
  );
  const unusable = (why: string) => blocked('ManagementAddressUnusable', `management interface ${link.name}: ${why}`);
  const [a] = mine;
  if (a === undefined) return unusable(`no IPv${family} address`);
  const list = mine.map((a) => `${a.address}/${a.prefixLength}`).join(', ');
  if (mine.length > 1) return unusable(`${mine.length} IPv${family} addresses (${list}): cannot tell the node subnet`);
  if (a.tentative) return unusable(`${a.address} is tentative (IPv6 duplicate address detection still running)`);
  if (a.dadFailed) return unusable(`${a.address} failed duplicate address detection`);
  if (a.prefixLength >= (family === 4 ? 32 : 128) - 1)
    return unusable(`${a.address}/${a.prefixLength} has no subnet to take a next hop from`);
  const ip = parseAddress(a.address);
  const second = addressInSubnet(ip, a.prefixLength, 2);
  if (!second.bytes.equals(ip.bytes))
    return unusable(
      `${a.address}/${a.prefixLength} is not the subnet's second address (OVN-Kubernetes gives the management port ${second.text})`,
    );
  return { via: addressInSubnet(ip, a.prefixLength, 1).text };
}

/** The next hop a service route of this family must have in the desired mode. */
export function expectedNexthop(
  mode: 'local' | 'shared',
  family: Family,
  input: PlanInput,
): { expected: NextHop } | Blocked {
  const { config, observed } = input;
  // br-ex must be present and up in both modes: without it nobody should be moving routes.
  const gateway = upLink(observed.links, config.gatewayInterface, 'Gateway');
  if ('blocked' in gateway) return gateway;
  const mp0 = findLink(observed.links, config.managementInterface);
  if (mode === 'local') {
    const up = upLink(observed.links, config.managementInterface, 'Management');
    if ('blocked' in up) return up;
    const hop = managementNexthop(up, family, observed.addresses);
    return 'blocked' in hop ? hop : { expected: { dev: up.name, oif: up.index, gateway: hop.via, mtu: null } };
  }
  const name = config.gatewayInterface;
  let via = config.gatewayNexthop[family];
  const defaults = (observed.routes.get(DEFAULT_ROUTE[family].text) ?? []).filter((r) => r.nextHop.dev === name);
  // The default route in use: the lowest metric. One with no gateway of its family (a link
  // route, or `via inet6` on an IPv4 route: RTA_VIA, BGP unnumbered) gives no next hop.
  const best = defaults.filter((r) => r.nextHop.gateway !== null).sort((a, b) => a.key.priority - b.key.priority)[0];
  via ||= best?.nextHop.gateway ?? undefined;
  if (!via) {
    const skipped = defaults.map(
      (r) => `metric ${r.key.priority} ${r.unmodelled.find((u) => u.startsWith('via ')) ?? renderNextHop(r.nextHop)}`,
    );
    const why = skipped.length > 0 ? `; skipped, no IPv${family} gateway: ${skipped.join(', ')}` : '';
    const what = `no IPv${family} default route via ${name} to take the next hop from${why} (set --gateway-nexthop)`;
    return blocked('NoDefaultRoute', what);
  }
  // ovnkube-node sets the cluster MTU itself: the agent's guess (--mtu, ovnkube.conf, the
  // management port's link MTU) is only compared for a warning, never a reason to write.
  return { expected: { dev: name, oif: gateway.index, gateway: via, mtu: config.mtu ?? mp0?.mtu ?? null } };
}

/** Why the routes of a CIDR may not be touched, or the one route the agent owns. */
export function ownedRoute(cidr: Cidr, routes: Route[], config: PlannerConfig): { route: Route } | Blocked {
  const [r] = routes;
  const none = `no route for ${cidr.text} in the main table: ovnkube-node creates it, the agent only replaces it`;
  if (r === undefined) return blocked('NoRoute', none);
  if (routes.length > 1) {
    const list = routes.map((r) => `metric ${r.key.priority} ${renderNextHop(r.nextHop)}`).join('; ');
    const why = `${routes.length} routes for ${cidr.text} in the main table (${list}): not touching an ambiguous prefix`;
    return blocked('SeveralRoutes', why);
  }
  const notOurs = (why: string) => blocked('NotOurRoute', `${cidr.text} ${why}: not one the agent owns`);
  const hop = r.nextHop;
  if (r.key.table !== RT_TABLE_MAIN) return notOurs(`is in table ${r.key.table}`);
  if (r.multipath) return notOurs('is a multipath route');
  if (r.type !== RTN_UNICAST) return notOurs(`is not a unicast route (type ${r.type})`);
  if (r.tos !== 0) return notOurs(`has a TOS selector (${r.tos})`);
  if (r.unmodelled.length > 0) return notOurs(`has ${r.unmodelled.join(', ')}, which a replace would not carry over`);
  if (hop.dev !== config.gatewayInterface && hop.dev !== config.managementInterface)
    return notOurs(`goes ${renderNextHop(hop)}, neither ${config.gatewayInterface} nor ${config.managementInterface}`);
  if (isLinkLocal(hop.gateway)) return notOurs(`goes via the link-local next hop ${hop.gateway}`);
  // A link route replaced by one via a gateway would keep its scope, which the kernel refuses.
  if (hop.gateway === null) return notOurs(`goes ${renderNextHop(hop)}, with no gateway (a link route)`);
  return { route: r };
}

/**
 * One loop for both modes. Desired shared is ovnkube-node's (guarantee 6), never an action; the status
 * says where the node stands. A route via ovn-k8s-mp0 under a shared (or unchecked) ovnkube-node is
 * OvnkubeFallbackRoute, Converged: its choice in an upgrade window, or a restart to come; Waiting would
 * page for a healthy node.
 */
export function plan(input: PlanInput): Plan {
  const { desired, config, observed } = input;
  const { mode, source } = desired;
  const suspended = input.suspended ?? new Map<string, string>();
  const reasons: Reason[] = [];
  const warnings = mode === 'local' ? [EGRESS_FIREWALL_WARNING] : [];
  const platform = detectLayout(input);
  const { layout } = platform;
  const statuses: RouteStatus[] = [];
  let awaitsOvnkube = false;
  const finish = (blocked: boolean, why: Reason[], actions: ReplaceAction[] = []): Plan => ({
    layout,
    platform: { release: platform.release, evidence: platform.evidence },
    actions,
    reasons: [...reasons, ...why],
    blocked,
    dryRun: config.dryRun,
    awaitsOvnkube,
    warnings,
    routes: statuses,
  });
  const unlooked = (why: Reason, blocked: boolean, inSync = false): Plan => {
    statuses.push(...config.serviceCidrs.map((c) => statusOf(observed, c, null, inSync)));
    return finish(blocked, [why]);
  };

  if (mode === null) {
    const why = `no valid mode read yet: acting on nothing (${source.path}: ${source.error ?? 'not read yet'})`;
    return unlooked(reason('ModeNotRead', why), true);
  }
  if (source.error) {
    const why = `keeping the last valid desired mode "${mode}": ${source.path}: ${source.error}`;
    reasons.push(reason('ModeFileInvalid', why));
  }
  if (layout === 'routing-via-host') {
    const what = platform.release === '4.10+' ? 'OpenShift 4.10 or later' : 'routing-via-host layout';
    const why = `${what} (${platform.evidence}): service routes via ${config.gatewayInterface} are correct in both modes; nothing to change`;
    return unlooked(reason('RoutingViaHostLayout', why), false, true);
  }
  const local = mode === 'local';
  const mp0 = config.managementInterface;
  // The platform first, as rollback names it (only the operator can state it), then guarantee 7.
  const held = local && layout === 'unknown' ? [reason('LayoutUnknown', layoutUnknown(input, platform))] : [];
  const waits = ovnkubeHolds(input, mode);
  awaitsOvnkube = waits.length > 0;
  held.push(...waits);
  const actions: ReplaceAction[] = [];
  // Local: the suspended repairs; shared: ovnkube-node's own routes via ovn-k8s-mp0.
  const notes: Reason[] = [];
  // Per family, not per CIDR: it reads every link and address.
  const byFamily = new Map<Family, ReturnType<typeof expectedNexthop>>();
  for (const cidr of config.serviceCidrs) {
    const result = byFamily.get(cidr.family) ?? expectedNexthop(mode, cidr.family, input);
    byFamily.set(cidr.family, result);
    const expected = 'expected' in result ? result.expected : null;
    const owned = ownedRoute(cidr, observed.routes.get(cidr.text) ?? [], config);
    const hop = 'route' in owned ? owned.route.nextHop : null;
    // Shared: the MTU is ovnkube-node's (a warning at most).
    const inSync =
      hop !== null &&
      expected !== null &&
      (local ? sameNextHop(hop, expected) : hop.dev !== mp0 && hop.gateway === expected.gateway);
    statuses.push(statusOf(observed, cidr, expected, inSync));
    if (local) {
      const suspension = suspended.get(cidr.text);
      if ('blocked' in result) held.push(result.blocked);
      else if ('blocked' in owned) held.push(owned.blocked);
      else if (inSync) continue;
      else if (suspension !== undefined) notes.push(reason('RepairsSuspended', suspension));
      else {
        const { key, protocol, scope, type, nextHop: from } = owned.route;
        const to = result.expected;
        const what = `desired mode ${mode}: ${cidr.text} goes ${renderNextHop(from)}, expected ${renderNextHop(to)}`;
        actions.push({ key, protocol, scope, type, from, to, reason: reason('Replacing', what) });
      }
    } else if ('blocked' in owned) held.push(owned.blocked);
    else if (hop?.dev === mp0) {
      if (observed.ovnkube.modes.includes('local')) continue;
      const o = observed.ovnkube;
      const whose =
        o.mode === 'shared' ? `ovnkube-node (pid ${o.pid}) runs shared and keeps it` : 'ovnkube-node keeps it';
      const why = `${cidr.text} goes ${renderNextHop(hop)}: ${whose} on purpose while the cluster's topology version is old (an upgrade), or until its restart in shared mode moves it to ${config.gatewayInterface}; the agent writes nothing in shared mode`;
      notes.push(reason('OvnkubeFallbackRoute', why));
    } else if ('blocked' in result) held.push(result.blocked);
    else if (!inSync) {
      const from = config.gatewayNexthop[cidr.family]
        ? '--gateway-nexthop'
        : `${config.gatewayInterface}'s default gateway`;
      const why = `${cidr.text} goes ${renderNextHop(owned.route.nextHop)}, not via ${result.expected.gateway} (${from}): ovnkube-node sets it from [gateway] next-hop or the first default route at its start; the agent writes nothing in shared mode`;
      held.push(reason('NotOurRoute', why));
    } else if (result.expected.mtu !== null && owned.route.nextHop.mtu !== result.expected.mtu) {
      const { mtu } = owned.route.nextHop;
      const why = `${cidr.text} carries ${mtu === null ? 'no mtu' : `mtu ${mtu}`}, the agent expected ${result.expected.mtu} (--mtu, ovnkube.conf or ${mp0}'s link MTU): ovnkube-node sets it; left as it is`;
      warnings.push(why);
    }
  }
  warnings.push(...mtuMismatch(config, observed.links));
  if (held.length > 0) return finish(true, local ? [...held, ...notes] : held);
  // Guarantee 3: a suspended CIDR holds the others back too.
  if (notes.length > 0) return finish(false, notes);
  if (actions.length > 0) {
    const dry = config.dryRun ? [reason('DryRun', `dry run: ${actions.length} replace(s) planned, not applied`)] : [];
    return finish(false, [...dry, ...actions.map((a) => a.reason)], actions);
  }
  if (layout === 'unknown') {
    const why = `service routes have the shared-mode shape ovnkube-node gives them (release unknown: ${platform.evidence})`;
    return finish(false, [reason('AlreadyShared', why)]);
  }
  const made = local ? '' : ', as ovnkube-node makes them';
  return finish(false, [reason('InSync', `service routes match desired mode ${mode}${made}`)]);
}

/** Guarantee 7: ovnkube-node seen in another mode than `mode`, or (checked) its mode unknown. */
function ovnkubeHolds(input: PlanInput, mode: 'local' | 'shared'): Reason[] {
  const { config, observed } = input;
  const o = observed.ovnkube;
  const other = o.modes.find((m) => m !== mode);
  const who = o.mode !== null ? `ovnkube-node (pid ${o.pid})` : `an ovnkube-node (${o.detail})`;
  if (other) {
    const then =
      mode === 'local'
        ? 'waiting for the cluster network operator to roll ovnkube-node out'
        : `the cluster network operator's rollout restarts it in shared mode, which flushes its ${config.managementInterface} routes and adds the ${config.gatewayInterface} route itself; the agent writes nothing in shared mode`;
    return [reason('OvnkubeOtherMode', `${who} runs --gateway-mode ${other}, desired ${mode}: ${then}`)];
  }
  const unseen = modeUnseen(o, config.ovnkubeModeCheck === 'proc');
  return unseen === null ? [] : [reason('OvnkubeModeUnknown', unseen)];
}

/** Why ovnkube-node's mode counts as unseen (no process, or none saying its mode, `checked`: under --ovnkube-mode-check proc), or null: every door waits then, and no restart is proven. */
export function modeUnseen(o: Observation['ovnkube'], checked: boolean): string | null {
  if (o.mode !== null || !checked) return null;
  return `ovnkube-node's gateway mode is unknown: ${o.detail ?? 'no ovnkube --init-node process'}`;
}

function statusOf(observed: Observation, cidr: Cidr, expected: NextHop | null, ok: boolean): RouteStatus {
  const routes = observed.routes.get(cidr.text) ?? [];
  const only = routes.length === 1 ? routes[0] : undefined;
  const multipath = only?.multipath ?? false;
  const one = only && !multipath ? only.nextHop : null;
  return { cidr: cidr.text, family: cidr.family, observed: one, multipath, expected, inSync: ok };
}

export function layoutUnknown(input: PlanInput, platform: Platform): string {
  const { config, observed } = input;
  // Hints only (platform.ts, rule 3).
  const hints: string[] = [];
  if (findLink(observed.links, LEGACY_LOCAL_GATEWAY_LINK)) hints.push(`link ${LEGACY_LOCAL_GATEWAY_LINK} exists`);
  const viaMp0 = serviceRoutes(input).find((r) => r.nextHop.dev === config.managementInterface);
  if (viaMp0) hints.push(`${viaMp0.key.prefix} goes via ${config.managementInterface}`);
  const hinted = hints.length > 0 ? `; ${hints.join(' and ')}, which 4.10 nodes show too: no proof` : '';
  return `cannot tell the OpenShift release (${platform.evidence})${hinted}: the agent changes 4.8/4.9 nodes only; give --os-release the host's /etc/os-release, or state --layout legacy if this is a 4.8/4.9 node`;
}

function mtuMismatch(config: PlannerConfig, links: Link[]): string[] {
  const mp0 = findLink(links, config.managementInterface);
  const why = `the configured MTU ${config.mtu} differs from ${config.managementInterface}'s link MTU ${mp0?.mtu}: check the cluster MTU`;
  return config.mtu === null || mp0?.mtu == null || mp0.mtu === config.mtu ? [] : [why];
}
