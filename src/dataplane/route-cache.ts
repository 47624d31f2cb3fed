// The main-table routes of a set of prefixes, kept as the kernel reports them: a
// dump's rows, then route notifications applied in order. Pure: no I/O, no clock.
//
// Notifications are applied so that replaying one the dump already reflects changes
// nothing in the end (the dump and the subscription are two sockets, so the same
// change can reach the cache twice). Where that cannot be guaranteed, apply() says
// so and the owner re-dumps. The rules, per prefix, with "same key" meaning the same
// TOS and metric (what a kernel replace matches on) and "identical" meaning every
// decoded field equal:
//  1. NEW with NLM_F_REPLACE: the first route with the same key becomes the new one
//     (the kernel replaces the first alias of that key); none: it is added. Copies
//     identical to it that a replay left behind are dropped.
//  2. NEW without NLM_F_REPLACE: an identical route already there: nothing to do
//     (a replay). A different route with the same key: ambiguous (`ip route append`
//     or `prepend`, or a replay across a replace): re-dump.
//  3. DEL: the identical route is removed; if none, but one with the same key is
//     there, ambiguous: re-dump; otherwise it is already gone (a replay).
//  4. IPv6 multipath: a route added or replaced with several next hops, or deleted
//     whole, is notified whole (RTA_MULTIPATH) and goes through rules 1 to 3. An
//     appended next hop (NLM_F_APPEND) may be notified alone, depending on the
//     kernel: ambiguous, re-dump. A deleted sibling is notified alone and falls under
//     rule 3 (not identical to the cached multipath route of its metric). IPv4
//     multipath routes are always notified whole. Next hops compare as a set.
import { AF_INET6, NLM_F_APPEND, NLM_F_REPLACE, type DecodedNextHop, type DecodedRoute } from './codec.js';

function sameBuffer(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

function sameNextHops(a: DecodedNextHop[] | undefined, b: DecodedNextHop[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const text = (hops: DecodedNextHop[]) =>
    hops
      .map((h) => `${h.oif}/${h.gateway?.toString('hex') ?? ''}`)
      .sort()
      .join();
  return text(a) === text(b);
}

function sameKey(a: DecodedRoute, b: DecodedRoute): boolean {
  return a.tos === b.tos && a.priority === b.priority;
}

/** Every field the dataplane reports, and the ones a route depends on. Flags (linkdown, offload) are not compared. */
export function identicalRoutes(a: DecodedRoute, b: DecodedRoute): boolean {
  return (
    sameKey(a, b) &&
    a.type === b.type &&
    a.protocol === b.protocol &&
    a.scope === b.scope &&
    a.oif === b.oif &&
    a.mtu === b.mtu &&
    a.nhid === b.nhid &&
    a.unmodelled.join(',') === b.unmodelled.join(',') &&
    sameBuffer(a.gateway, b.gateway) &&
    sameNextHops(a.nexthops, b.nexthops)
  );
}

export class RouteCache {
  private readonly byPrefix = new Map<string, DecodedRoute[]>();

  constructor(private readonly labels: readonly string[]) {
    for (const label of labels) this.byPrefix.set(label, []);
  }

  /** Replaces every prefix's routes with a dump's rows (labels absent from it have none). */
  reset(dumped: ReadonlyMap<string, DecodedRoute[]>): void {
    for (const label of this.labels) this.byPrefix.set(label, [...(dumped.get(label) ?? [])]);
  }

  routes(label: string): DecodedRoute[] {
    return [...(this.byPrefix.get(label) ?? [])];
  }

  /** Applies one notification; false when it cannot be applied unambiguously (re-dump). */
  apply(label: string, op: 'new' | 'del', nlmsgFlags: number, route: DecodedRoute): boolean {
    const list = this.byPrefix.get(label);
    if (!list) return true;
    if (route.family === AF_INET6 && nlmsgFlags & NLM_F_APPEND) return false;
    const keyed = list.findIndex((r) => sameKey(r, route));
    const identical = list.findIndex((r) => identicalRoutes(r, route));
    if (op === 'del') {
      if (identical >= 0) list.splice(identical, 1);
      return identical >= 0 || keyed < 0;
    }
    if (nlmsgFlags & NLM_F_REPLACE) {
      if (keyed < 0) list.push(route);
      else {
        list[keyed] = route;
        for (let i = list.length - 1; i > keyed; i--)
          if (identicalRoutes(list[i] as DecodedRoute, route)) list.splice(i, 1);
      }
      return true;
    }
    if (identical >= 0) return true;
    if (keyed >= 0) return false;
    list.push(route);
    return true;
  }

  /** Prefixes with a route through this link, as output interface or a multipath next hop. */
  prefixesUsingLink(index: number): string[] {
    const uses = (r: DecodedRoute) => r.oif === index || (r.nexthops ?? []).some((h) => h.oif === index);
    return this.labels.filter((label) => (this.byPrefix.get(label) ?? []).some(uses));
  }

  /** Prefixes with a route whose next hop is a nexthop object. */
  prefixesUsingNexthopObjects(): string[] {
    return this.labels.filter((label) => (this.byPrefix.get(label) ?? []).some((r) => r.nhid !== undefined));
  }
}
