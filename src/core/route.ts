// The kernel objects the rules reason about; the dataplane maps netlink to these. A route is one
// key (what a replace matches on: it swaps that very route or fails with ENOENT, never creates one)
// and one next hop (the part the agent owns), the same types for what was observed and wanted.
import type { Cidr, Family } from '../net/cidr.js';

export interface Link {
  index: number;
  name: string;
  up: boolean;
  /** IFLA_MTU; null when the kernel did not say. */
  mtu: number | null;
}

export interface InterfaceAddress {
  linkIndex: number;
  family: Family;
  address: string;
  prefixLength: number;
  /** IPv6 duplicate address detection still running, or failed (another host holds the address). */
  tentative: boolean;
  dadFailed: boolean;
}

export interface RouteKey {
  /** Canonical "address/length" (Cidr.text). */
  prefix: string;
  family: Family;
  table: number;
  priority: number;
}

export interface NextHop {
  /** Output interface name; null when the route has none or its link is gone. */
  dev: string | null;
  /** Output interface index; with dev, both come from one link dump. */
  oif: number | null;
  gateway: string | null;
  mtu: number | null;
}

export interface Route {
  key: RouteKey;
  nextHop: NextHop;
  protocol: number;
  scope: number;
  type: number;
  /** IPv4 TOS selector: ovnkube-node's service routes have none. */
  tos: number;
  multipath: boolean;
  /** What a replace of its next hop would not carry over (`src 10.0.0.1`, `onlink`, ...): not ovnkube-node's. */
  unmodelled: string[];
}

/** The one comparison of next hops: device, gateway and MTU, all three, always. */
export function sameNextHop(a: NextHop, b: NextHop): boolean {
  return a.dev === b.dev && a.gateway === b.gateway && a.mtu === b.mtu;
}

/** How a next hop reads in logs and status: `via 172.18.0.1 dev br-ex mtu 1400`. */
export function renderNextHop(n: NextHop): string {
  const parts = [n.gateway && `via ${n.gateway}`, n.dev && `dev ${n.dev}`, n.mtu !== null && `mtu ${n.mtu}`];
  return parts.filter(Boolean).join(' ') || '(no next hop)';
}

/** An atomic replace of one route's next hop, keeping its key, protocol, scope and type. */
export interface RouteReplace {
  key: RouteKey;
  protocol: number;
  scope: number;
  type: number;
  to: NextHop;
}

/** What the agent watches: the prefixes it observes and the links whose changes wake it. */
export interface Watched {
  /** Service CIDRs, then the default route of each of their families. */
  prefixes: Cidr[];
  links: string[];
}

export const RT_TABLE_MAIN = 254;
export const RTN_UNICAST = 1;
