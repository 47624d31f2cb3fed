// The rules (../shared/notes/domain.md), as one pure function: observation and
// configuration in, plan out. No I/O, no clock. Every "no" carries its reason,
// because an agent that refuses must say why.
//
// What the planner guarantees, whatever it is given:
//  1. It only plans replaces of main-table routes whose destination is exactly a
//     service CIDR, and only of a route that already exists (ovnkube-node creates
//     them; the agent swaps the next hop). Nothing is ever deleted or created.
//  2. A replace keeps the route's table, priority, protocol, scope and type.
//  3. It plans nothing unless every precondition holds for every CIDR: a half-done
//     dual-stack migration is worse than none.
//  4. It never changes a node of the routing-via-host layout (OpenShift 4.10+), where
//     a service route via br-ex is correct in both modes.
import type { InterfaceAddress, KernelRoute, Link } from '../dataplane/types.js';
import { firstAddressOfSubnet, parseAddress, type Cidr, type Family } from '../net/cidr.js';
import type {
  DesiredMode,
  Layout,
  Observation,
  Plan,
  PlannerConfig,
  ReplaceAction,
  RouteShape,
  RouteStatus,
} from './types.js';

/** 4.8/4.9 local mode creates this link (on the br-local bridge). */
export const LEGACY_LOCAL_GATEWAY_LINK = 'ovn-k8s-gw0';
/** From about 4.12, service routes go via br-ex to these fixed next hops in both modes. */
export const ROUTING_VIA_HOST_NEXTHOPS = new Set(['169.254.169.4', 'fd69::4']);
export const EGRESS_FIREWALL_WARNING =
  'egress firewall cannot be repaired per node: its ACLs live in the OVN northbound database';

const RTN_UNICAST = 1;
export const DEFAULT_ROUTE: Record<Family, string> = { 4: '0.0.0.0/0', 6: '::/0' };

export interface PlanInput {
  desired: DesiredMode;
  config: PlannerConfig;
  observed: Observation;
}

interface Expected extends RouteShape {
  oif: number;
  /** False when the MTU of a shared-mode route is not known: it is then not compared. */
  mtuMatters: boolean;
}

const shapeOf = (r: KernelRoute): RouteShape => ({ dev: r.dev, via: r.gateway, mtu: r.mtu });
export const describeShape = (s: RouteShape): string =>
  `via ${s.via ?? '(none)'} dev ${s.dev ?? '(none)'}${s.mtu === null ? '' : ` mtu ${s.mtu}`}`;

function isLinkLocal(a: InterfaceAddress): boolean {
  return a.family === 6 && /^fe[89ab]/i.test(a.address);
}

function findLink(links: Link[], name: string): Link | undefined {
  return links.find((l) => l.name === name);
}

export function detectLayout(input: PlanInput): { layout: Layout; why: string } {
  const { config, observed } = input;
  if (config.layout !== 'auto') return { layout: config.layout, why: `--layout ${config.layout}` };
  const serviceRoutes = config.serviceCidrs.flatMap((c) => observed.routes.get(c.text) ?? []);
  const viaFixed = serviceRoutes.find((r) => r.gateway !== null && ROUTING_VIA_HOST_NEXTHOPS.has(r.gateway));
  if (viaFixed) {
    return { layout: 'routing-via-host', why: `${viaFixed.prefix} goes via ${viaFixed.gateway} (4.10+ layout)` };
  }
  if (findLink(observed.links, LEGACY_LOCAL_GATEWAY_LINK)) {
    return { layout: 'legacy', why: `link ${LEGACY_LOCAL_GATEWAY_LINK} exists (4.8/4.9 local gateway)` };
  }
  const viaMp0 = serviceRoutes.find((r) => r.dev === config.managementInterface);
  if (viaMp0) return { layout: 'legacy', why: `${viaMp0.prefix} goes via ${config.managementInterface} (4.8/4.9 local mode)` };
  return { layout: 'unknown', why: '' };
}

/** The next hop and device a service route of this family must have in the desired mode. */
function expectedRoute(
  mode: 'local' | 'shared',
  family: Family,
  input: PlanInput,
): { expected: Expected } | { blocked: string } {
  const { config, observed } = input;
  // The gateway interface must be present and up in both directions: without br-ex
  // the node is not in a state anyone should be moving routes in.
  const gateway = findLink(observed.links, config.gatewayInterface);
  if (!gateway) return { blocked: `gateway interface ${config.gatewayInterface} does not exist` };
  if (!gateway.up) return { blocked: `gateway interface ${config.gatewayInterface} is down` };
  if (mode === 'local') {
    const name = config.managementInterface;
    const link = findLink(observed.links, name);
    if (!link) return { blocked: `management interface ${name} does not exist` };
    if (!link.up) return { blocked: `management interface ${name} is down` };
    const address = observed.addresses.find((a) => a.linkIndex === link.index && a.family === family && !isLinkLocal(a));
    if (!address) return { blocked: `management interface ${name} has no IPv${family} address` };
    const via = firstAddressOfSubnet(parseAddress(address.address), address.prefixLength).text;
    return { expected: { dev: name, via, mtu: null, oif: link.index, mtuMatters: true } };
  }
  const name = config.gatewayInterface;
  let via = config.gatewayNexthop[family];
  if (!via) {
    const defaults = observed.routes.get(DEFAULT_ROUTE[family]) ?? [];
    via = defaults.find((r) => r.dev === name && r.gateway !== null)?.gateway ?? undefined;
  }
  if (!via) {
    return { blocked: `no IPv${family} default route via ${name} to take the next hop from (set --gateway-nexthop)` };
  }
  return {
    expected: { dev: name, via, mtu: config.mtu, oif: gateway.index, mtuMatters: config.mtu !== null },
  };
}

function inSync(route: KernelRoute, expected: Expected): boolean {
  return (
    route.dev === expected.dev &&
    route.gateway === expected.via &&
    (!expected.mtuMatters || route.mtu === expected.mtu)
  );
}

/** Why a route may not be touched at all, or undefined when it is one of the two shapes we own. */
function untouchable(cidr: Cidr, routes: KernelRoute[], config: PlannerConfig): string | undefined {
  if (routes.length === 0) {
    return `no route for ${cidr.text} in the main table: ovnkube-node creates it, the agent only replaces it`;
  }
  if (routes.length > 1) return `${routes.length} routes for ${cidr.text} in the main table: not touching an ambiguous prefix`;
  const r = routes[0]!;
  if (r.multipath) return `${cidr.text} is a multipath route: not one the agent owns`;
  if (r.type !== RTN_UNICAST) return `${cidr.text} is not a unicast route (type ${r.type}): not one the agent owns`;
  if (r.dev !== config.gatewayInterface && r.dev !== config.managementInterface) {
    return `${cidr.text} goes ${describeShape(shapeOf(r))}, neither ${config.gatewayInterface} nor ${config.managementInterface}: not one the agent owns`;
  }
  return undefined;
}

export function plan(input: PlanInput): Plan {
  const { desired, config, observed } = input;
  const reasons: string[] = [];
  const warnings = desired.mode === 'local' ? [EGRESS_FIREWALL_WARNING] : [];
  const statusOf = (cidr: Cidr, expected: RouteShape | null, ok: boolean): RouteStatus => {
    const routes = observed.routes.get(cidr.text) ?? [];
    return {
      cidr: cidr.text,
      family: cidr.family,
      observed: routes.length === 1 ? shapeOf(routes[0]!) : null,
      expected,
      inSync: ok,
    };
  };
  const unplanned = (layout: Layout, phase: Plan['phase'], why: string[], inSync = false): Plan => ({
    phase,
    layout,
    reasons: why,
    warnings,
    routes: config.serviceCidrs.map((c) => statusOf(c, null, inSync)),
    actions: [],
  });

  const { layout, why: layoutWhy } = detectLayout(input);

  if (desired.mode === null) {
    const detail = desired.source.error ?? 'not read yet';
    return unplanned(layout, 'Waiting', [`no valid desired mode yet (${desired.source.path}: ${detail})`]);
  }
  if (desired.source.error) {
    reasons.push(`keeping the last valid desired mode "${desired.mode}": ${desired.source.path}: ${desired.source.error}`);
  }

  if (layout === 'routing-via-host') {
    const why = `routing-via-host layout (${layoutWhy}): service routes via ${config.gatewayInterface} are correct in both modes; nothing to change`;
    return unplanned(layout, 'Converged', [...reasons, why], true);
  }

  const blocked: string[] = [];
  if (layout === 'unknown') {
    blocked.push(
      `cannot tell the node's layout: no ${LEGACY_LOCAL_GATEWAY_LINK} link and no service route via ${config.managementInterface}, 169.254.169.4 or fd69::4; set --layout legacy or --layout routing-via-host`,
    );
  }
  if (config.ovnkubeModeCheck === 'proc') {
    const o = observed.ovnkube;
    if (o.mode === null) blocked.push(`ovnkube-node's gateway mode is unknown: ${o.detail ?? 'no ovnkube --init-node process'}`);
    else if (o.mode !== desired.mode) {
      blocked.push(
        `ovnkube-node (pid ${o.pid}) runs --gateway-mode ${o.mode}, desired ${desired.mode}: waiting for the cluster network operator to roll ovnkube-node out`,
      );
    }
  }

  const statuses: RouteStatus[] = [];
  const actions: ReplaceAction[] = [];
  for (const cidr of config.serviceCidrs) {
    const routes = observed.routes.get(cidr.text) ?? [];
    const result = expectedRoute(desired.mode, cidr.family, input);
    if ('blocked' in result) {
      blocked.push(result.blocked);
      statuses.push(statusOf(cidr, null, false));
      continue;
    }
    const { expected } = result;
    const shape: RouteShape = { dev: expected.dev, via: expected.via, mtu: expected.mtu };
    const notOurs = untouchable(cidr, routes, config);
    if (notOurs) {
      blocked.push(notOurs);
      statuses.push(statusOf(cidr, shape, false));
      continue;
    }
    const route = routes[0]!;
    const ok = inSync(route, expected);
    statuses.push(statusOf(cidr, shape, ok));
    if (ok) continue;
    actions.push({
      cidr,
      from: shapeOf(route),
      to: expected.mtuMatters ? shape : { ...shape, mtu: null },
      table: route.table,
      priority: route.priority,
      protocol: route.protocol,
      scope: route.scope,
      type: route.type,
      oif: expected.oif,
      reason: `desired mode ${desired.mode}: ${cidr.text} goes ${describeShape(shapeOf(route))}, expected ${describeShape(shape)}`,
    });
  }

  if (blocked.length > 0) {
    // A shared node whose routes already have the shared shape needs nothing in any
    // layout: say so instead of waiting on a layout that does not matter.
    const allSynced = statuses.every((s) => s.inSync);
    if (layout === 'unknown' && allSynced && blocked.length === 1 && desired.mode === 'shared') {
      return { phase: 'Converged', layout, reasons: [...reasons, 'service routes already have the shared-mode shape'], warnings, routes: statuses, actions: [] };
    }
    return { phase: 'Waiting', layout, reasons: [...reasons, ...blocked], warnings, routes: statuses, actions: [] };
  }
  if (actions.length === 0) {
    return { phase: 'Converged', layout, reasons: [...reasons, `service routes match desired mode ${desired.mode}`], warnings, routes: statuses, actions };
  }
  if (config.dryRun) {
    return {
      phase: 'Waiting',
      layout,
      reasons: [...reasons, `dry run: ${actions.length} replace(s) planned, not applied`, ...actions.map((a) => a.reason)],
      warnings,
      routes: statuses,
      actions,
    };
  }
  return { phase: 'Progressing', layout, reasons: [...reasons, ...actions.map((a) => a.reason)], warnings, routes: statuses, actions };
}
