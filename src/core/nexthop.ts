// The next hops a service route must have, and which route of a service CIDR the agent
// owns: the checks behind guarantees 1, 2 and 5 of planner.ts, pure as the planner.
import { addressInSubnet, maskBytes, parseAddress, parseCidr, type Cidr, type Family } from '../net/cidr.js';
import { reason, type Reason } from './reasons.js';
import {
  renderNextHop,
  RT_TABLE_MAIN,
  RTN_UNICAST,
  type InterfaceAddress,
  type Link,
  type NextHop,
  type Route,
} from './route.js';
import type { Observation, PlannerConfig } from './types.js';

const LINK_LOCAL_NEXTHOPS = [parseCidr('169.254.0.0/16'), parseCidr('fd69::/16')];

export const DEFAULT_ROUTE: Record<Family, string> = { 4: '0.0.0.0/0', 6: '::/0' };

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

export function findLink(links: Link[], name: string): Link | undefined {
  return links.find((l) => l.name === name);
}

/**
 * The local-mode next hop: ovn-k8s-mp0 holds the node subnet's second address and the
 * OVN router port its first. Anything else (no address, two, a host route, an IPv6
 * address still in DAD or failed it, an address that is not the .2) and the next hop
 * would be a guess: refuse.
 */
export function managementNexthop(
  link: Link,
  family: Family,
  addresses: InterfaceAddress[],
): { via: string } | { blocked: Reason } {
  const name = link.name;
  const mine = addresses.filter(
    (a) => a.linkIndex === link.index && a.family === family && !(family === 6 && /^fe[89ab]/i.test(a.address)),
  );
  const unusable = (why: string) => ({
    blocked: reason('ManagementAddressUnusable', `management interface ${name}: ${why}`),
  });
  const [a] = mine;
  if (a === undefined) return unusable(`no IPv${family} address`);
  if (mine.length > 1)
    return unusable(
      `${mine.length} IPv${family} addresses (${mine.map((a) => `${a.address}/${a.prefixLength}`).join(', ')}): cannot tell the node subnet`,
    );
  if (a.tentative) return unusable(`${a.address} is tentative (IPv6 duplicate address detection still running)`);
  if (a.dadFailed) return unusable(`${a.address} failed duplicate address detection`);
  const bits = family === 4 ? 32 : 128;
  if (a.prefixLength >= bits - 1)
    return unusable(`${a.address}/${a.prefixLength} has no subnet to take a next hop from`);
  const ip = parseAddress(a.address);
  const second = addressInSubnet(ip, a.prefixLength, 2);
  if (!second.bytes.equals(ip.bytes)) {
    return unusable(
      `${a.address}/${a.prefixLength} is not the subnet's second address (OVN-Kubernetes gives the management port ${second.text})`,
    );
  }
  return { via: addressInSubnet(ip, a.prefixLength, 1).text };
}

/** The next hop a service route of this family must have in the desired mode. */
export function expectedNexthop(
  mode: 'local' | 'shared',
  family: Family,
  input: { config: PlannerConfig; observed: Observation },
): { expected: NextHop } | { blocked: Reason } {
  const { config, observed } = input;
  // The gateway interface must be present and up in both modes: without br-ex the
  // node is not in a state anyone should be moving routes in.
  const gateway = findLink(observed.links, config.gatewayInterface);
  if (!gateway)
    return { blocked: reason('GatewayLinkMissing', `gateway interface ${config.gatewayInterface} does not exist`) };
  if (!gateway.up)
    return { blocked: reason('GatewayLinkDown', `gateway interface ${config.gatewayInterface} is down`) };
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
    const skipped = defaults.map(
      (r) => `metric ${r.key.priority} ${r.unmodelled.find((u) => u.startsWith('via ')) ?? renderNextHop(r.nextHop)}`,
    );
    const why = skipped.length > 0 ? `; skipped, no IPv${family} gateway: ${skipped.join(', ')}` : '';
    return {
      blocked: reason(
        'NoDefaultRoute',
        `no IPv${family} default route via ${name} to take the next hop from${why} (set --gateway-nexthop)`,
      ),
    };
  }
  // Shared-mode routes carry the cluster MTU, which ovnkube-node sets itself: the agent's
  // guess (--mtu, else ovnkube.conf, else the management port's link MTU) is only compared
  // for a warning, never a reason to write.
  const mtu = config.mtu ?? mp0?.mtu ?? null;
  return { expected: { dev: name, oif: gateway.index, gateway: via, mtu } };
}

/** Why the routes of a CIDR may not be touched, or the one route the agent owns. */
export function ownedRoute(cidr: Cidr, routes: Route[], config: PlannerConfig): { route: Route } | { blocked: Reason } {
  const [r] = routes;
  if (r === undefined) {
    return {
      blocked: reason(
        'NoRoute',
        `no route for ${cidr.text} in the main table: ovnkube-node creates it, the agent only replaces it`,
      ),
    };
  }
  if (routes.length > 1) {
    const list = routes.map((r) => `metric ${r.key.priority} ${renderNextHop(r.nextHop)}`).join('; ');
    return {
      blocked: reason(
        'SeveralRoutes',
        `${routes.length} routes for ${cidr.text} in the main table (${list}): not touching an ambiguous prefix`,
      ),
    };
  }
  const notOurs = (why: string) => ({ blocked: reason('NotOurRoute', `${cidr.text} ${why}: not one the agent owns`) });
  if (r.key.table !== RT_TABLE_MAIN) return notOurs(`is in table ${r.key.table}`);
  if (r.multipath) return notOurs('is a multipath route');
  if (r.type !== RTN_UNICAST) return notOurs(`is not a unicast route (type ${r.type})`);
  if (r.tos !== 0) return notOurs(`has a TOS selector (${r.tos})`);
  if (r.unmodelled.length > 0) return notOurs(`has ${r.unmodelled.join(', ')}, which a replace would not carry over`);
  if (r.nextHop.dev !== config.gatewayInterface && r.nextHop.dev !== config.managementInterface) {
    return notOurs(
      `goes ${renderNextHop(r.nextHop)}, neither ${config.gatewayInterface} nor ${config.managementInterface}`,
    );
  }
  if (isLinkLocalNexthop(r.nextHop.gateway)) return notOurs(`goes via the link-local next hop ${r.nextHop.gateway}`);
  // Every 4.8/4.9 service route has a gateway; a link route (scope link) replaced by one via a
  // gateway would keep its scope, which the kernel refuses (a replace that could never work).
  if (r.nextHop.gateway === null) return notOurs(`goes ${renderNextHop(r.nextHop)}, with no gateway (a link route)`);
  return { route: r };
}
