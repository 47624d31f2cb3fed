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
//  7. It never acts while ovnkube-node is seen running the other mode, whatever
//     --ovnkube-mode-check says: `off` only lets it act where ovnkube-node's mode is not seen
//     (no ovnkube --init-node process in the agent's view of /proc).
import { parseCidr, type Cidr, type Family } from '../net/cidr.js';
import { DEFAULT_ROUTE, expectedNexthop, findLink, ownedRoute } from './nexthop.js';
import { identifyPlatform, type Platform } from './platform.js';
import { reason, type Reason } from './reasons.js';
import { renderNextHop, sameNextHop, type Link, type NextHop, type Route, type Watched } from './route.js';
import type {
  DesiredMode,
  Observation,
  OvnkubeObservation,
  Plan,
  PlannerConfig,
  ReplaceAction,
  RouteStatus,
} from './types.js';

export { DEFAULT_ROUTE, managementNexthop, ownedRoute } from './nexthop.js';

/** 4.8/4.9 local mode creates this link (on the br-local bridge). */
export const LEGACY_LOCAL_GATEWAY_LINK = 'ovn-k8s-gw0';
export const EGRESS_FIREWALL_WARNING =
  'egress firewall cannot be repaired per node: its ACLs live in the OVN northbound database';

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

function serviceRoutes(input: PlanInput): Route[] {
  return input.config.serviceCidrs.flatMap((c) => input.observed.routes.get(c.text) ?? []);
}

/** The node's release and layout (platform.ts), from its os-release, ovnkube.conf, service routes and ovnkube-node's command line. */
export function detectLayout(input: PlanInput): Platform {
  return identifyPlatform(input.config, serviceRoutes(input), input.observed.ovnkube);
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
    // Never "keeping the last valid mode": there was none, and nothing is done.
    return done(
      [
        reason(
          'ModeNotRead',
          `no valid mode read yet: acting on nothing (${desired.source.path}: ${desired.source.error ?? 'not read yet'})`,
        ),
      ],
      true,
    );
  }
  if (desired.source.error) {
    reasons.push(
      reason(
        'ModeFileInvalid',
        `keeping the last valid desired mode "${desired.mode}": ${desired.source.path}: ${desired.source.error}`,
      ),
    );
  }
  if (layout === 'routing-via-host') {
    const what = platform.release === '4.10+' ? 'OpenShift 4.10 or later' : 'routing-via-host layout';
    const why = `${what} (${platform.evidence}): service routes via ${config.gatewayInterface} are correct in both modes; nothing to change`;
    return done([reason('RoutingViaHostLayout', why)], false, true);
  }
  if (desired.mode === 'shared') return planShared(input, { layout, platform: found, reasons, warnings });

  const blocked: Reason[] = [];
  // ovnkube-node in the other mode first: it is the reason that passes by itself (the rollout).
  // Seen in the other mode it is waited for whatever --ovnkube-mode-check says (guarantee 7).
  // So is one whose namespace cannot be read, or one of several that disagree: either may be
  // this node's (guarantee 7).
  const o = observed.ovnkube;
  const other = o.modes.find((m) => m !== desired.mode);
  if (other) {
    blocked.push(
      reason(
        'OvnkubeOtherMode',
        `${runner(o)} runs --gateway-mode ${other}, desired ${desired.mode}: waiting for the cluster network operator to roll ovnkube-node out`,
      ),
    );
  } else if (o.mode === null && config.ovnkubeModeCheck === 'proc') blocked.push(modeUnknown(o));

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
      reason: reason(
        'Replacing',
        `desired mode ${desired.mode}: ${cidr.text} goes ${renderNextHop(route.nextHop)}, expected ${renderNextHop(expected)}`,
      ),
    });
  }
  const mtuWarning = mtuMismatch(config, observed.links);
  if (mtuWarning) warnings.push(mtuWarning);

  const base = { layout, platform: found, warnings, routes: statuses, dryRun: config.dryRun, awaitsOvnkube };
  if (blocked.length > 0) return { ...base, actions: [], blocked: true, reasons: [...reasons, ...blocked, ...held] };
  // Guarantee 3: a suspended CIDR holds the others back too.
  if (held.length > 0) return { ...base, actions: [], blocked: false, reasons: [...reasons, ...held] };
  if (actions.length === 0) {
    return {
      ...base,
      actions,
      blocked: false,
      reasons: [...reasons, reason('InSync', `service routes match desired mode ${desired.mode}`)],
    };
  }
  if (config.dryRun) {
    const dry = reason('DryRun', `dry run: ${actions.length} replace(s) planned, not applied`);
    return { ...base, actions, blocked: false, reasons: [...reasons, dry, ...actions.map((a) => a.reason)] };
  }
  return { ...base, actions, blocked: false, reasons: [...reasons, ...actions.map((a) => a.reason)] };
}

/** Who runs the other mode: the one ovnkube-node, or one of those /proc leaves unsure. */
const runner = (o: OvnkubeObservation): string =>
  o.mode !== null ? `ovnkube-node (pid ${o.pid})` : `an ovnkube-node (${o.detail})`;

const modeUnknown = (o: OvnkubeObservation): Reason =>
  reason(
    'OvnkubeModeUnknown',
    `ovnkube-node's gateway mode is unknown: ${o.detail ?? 'no ovnkube --init-node process'}`,
  );

function statusOf(observed: Observation, cidr: Cidr, expected: NextHop | null, ok: boolean): RouteStatus {
  const routes = observed.routes.get(cidr.text) ?? [];
  const only = routes.length === 1 ? routes[0] : undefined;
  const multipath = only?.multipath ?? false;
  const one = only && !multipath ? only.nextHop : null;
  return { cidr: cidr.text, family: cidr.family, observed: one, multipath, expected, inSync: ok };
}

/** One answer per family: it depends on the links, addresses and default routes only. */
function perFamily<T>(find: (family: Family) => T): (family: Family) => T {
  const known = new Map<Family, { answer: T }>();
  return (family) => {
    let hit = known.get(family);
    if (hit === undefined) known.set(family, (hit = { answer: find(family) }));
    return hit.answer;
  };
}

export function layoutUnknown(input: PlanInput, platform: Platform): string {
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
  const ovnkubeLocal = o.modes.includes('local');
  if (ovnkubeLocal) {
    blocked.push(
      reason(
        'OvnkubeOtherMode',
        `${runner(o)} runs --gateway-mode local, desired shared: the cluster network operator's rollout restarts it in shared mode, which flushes its ${config.managementInterface} routes and adds the ${config.gatewayInterface} route itself; the agent writes nothing in shared mode`,
      ),
    );
  } else if (o.mode === null && config.ovnkubeModeCheck === 'proc') blocked.push(modeUnknown(o));
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
      const whose =
        o.mode === 'shared' ? `ovnkube-node (pid ${o.pid}) runs shared and keeps it` : 'ovnkube-node keeps it';
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
      warnings.push(
        `${cidr.text} carries ${hop.mtu === null ? 'no mtu' : `mtu ${hop.mtu}`}, the agent expected ${expected.mtu} (--mtu, ovnkube.conf or ${config.managementInterface}'s link MTU): ovnkube-node sets it; left as it is`,
      );
    }
  }
  const mtuWarning = mtuMismatch(config, observed.links);
  if (mtuWarning) warnings.push(mtuWarning);
  const out = { layout, platform, warnings, routes: statuses, actions: [], dryRun: config.dryRun, awaitsOvnkube };
  if (blocked.length > 0) return { ...out, blocked: true, reasons: [...reasons, ...blocked] };
  if (fallbacks.length > 0) return { ...out, blocked: false, reasons: [...reasons, ...fallbacks] };
  if (layout === 'unknown') {
    return {
      ...out,
      blocked: false,
      reasons: [
        ...reasons,
        reason(
          'AlreadyShared',
          `service routes have the shared-mode shape ovnkube-node gives them (release unknown: ${platform.evidence})`,
        ),
      ],
    };
  }
  return {
    ...out,
    blocked: false,
    reasons: [...reasons, reason('InSync', 'service routes match desired mode shared, as ovnkube-node makes them')],
  };
}

function mtuMismatch(config: PlannerConfig, links: Link[]): string | undefined {
  const mp0 = findLink(links, config.managementInterface);
  if (config.mtu === null || mp0?.mtu == null || mp0.mtu === config.mtu) return undefined;
  return `the configured MTU ${config.mtu} differs from ${config.managementInterface}'s link MTU ${mp0.mtu}: check the cluster MTU`;
}
