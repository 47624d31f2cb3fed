// One subscription of the KernelDataplane: its socket, its event filter, the route
// cache of its prefixes, and its kept links and addresses. The numbered points cited
// here are those of kernel.ts's header (2 to 5 and 7).
import type { InterfaceAddress, Link, Watched } from '../core/route.js';
import type { Cidr } from '../net/cidr.js';
import { SubscriptionChannel } from './channel.js';
import {
  decodeAddress,
  decodeLink,
  decodeRoute,
  encodeRouteFilter,
  PrefixFilter,
  routeTable,
  RT_TABLE_MAIN,
  RTM_DELADDR,
  RTM_DELLINK,
  RTM_DELNEXTHOP,
  RTM_DELROUTE,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWNEXTHOP,
  RTM_NEWROUTE,
  RTNLGRP_IPV4_IFADDR,
  RTNLGRP_IPV4_ROUTE,
  RTNLGRP_IPV6_IFADDR,
  RTNLGRP_IPV6_ROUTE,
  RTNLGRP_LINK,
  RTNLGRP_NEXTHOP,
  type DecodedRoute,
  type NetlinkMessage,
} from './codec.js';
import { filterPrefixesOf, toAddress } from './convert.js';
import { NetlinkDecodeError } from './errors.js';
import { RouteCache } from './route-cache.js';
import { routeSocketFilter } from './socket-filter.js';
import type { NetlinkTransport } from './transport.js';
import type { DataplaneEvent, Subscription } from './types.js';

type Pending =
  | { kind: 'route'; label: string; op: 'new' | 'del'; flags: number; route: DecodedRoute }
  | { kind: 'link-flush'; index: number }
  | { kind: 'nexthop-flush' };

/**
 * One subscription: its socket, its event filter, and the route cache of its
 * prefixes, and its kept links and addresses (points 2 to 5 and 7 of the header).
 */
export class WatchedSubscription implements Subscription {
  private readonly channel: SubscriptionChannel;
  private readonly prefixes: Cidr[];
  private readonly byLabel: Map<string, Cidr>;
  private readonly filter: PrefixFilter;
  private readonly cache: RouteCache;
  private readonly linkNames: Set<string>;
  /** Index -> name of links that bore a watched name, so a rename away is still reported. */
  private readonly watchedIndexes = new Map<number, string>();
  private state: 'dirty' | 'seeding' | 'ready' | 'closed' = 'dirty';
  /** Notifications that arrived while the seeding dump ran, in order. */
  private pending: Pending[] = [];
  private seeding: Promise<Map<string, DecodedRoute[]>> | undefined;
  /** The last link and address dumps, while nothing said they changed (point 7 of the header). */
  private keptLinks: Link[] | undefined;
  private keptAddresses: InterfaceAddress[] | undefined;
  /** Counts link and address notifications and losses: a dump that saw it move is not kept. */
  private interfaceChanges = 0;

  constructor(
    transport: NetlinkTransport,
    watched: Watched,
    private readonly onEvent: (event: DataplaneEvent) => void,
    private readonly dumpRoutes: (prefixes: readonly Cidr[]) => Promise<Map<string, DecodedRoute[]>>,
    private readonly onClose: () => void,
    rcvbuf: number | undefined,
  ) {
    this.byLabel = new Map(watched.prefixes.map((p) => [p.text, p]));
    this.prefixes = [...this.byLabel.values()];
    const filterPrefixes = filterPrefixesOf(this.prefixes);
    this.filter = new PrefixFilter(filterPrefixes);
    this.cache = new RouteCache(this.prefixes.map((p) => p.text));
    this.linkNames = new Set(watched.links);
    // The kernel-side filter only spares work: should building it fail, the subscription
    // runs without it (and says so below) rather than not at all.
    let program: Buffer | null = null;
    let unbuilt: Error | undefined;
    try {
      program = routeSocketFilter(RT_TABLE_MAIN, filterPrefixes);
      if (!program && this.prefixes.length > 0) {
        unbuilt = new Error(
          `no kernel-side filter for ${this.prefixes.length} watched prefixes: its program would exceed 4,096 instructions`,
        );
      }
    } catch (err) {
      unbuilt = err instanceof Error ? err : new Error(String(err));
    }
    this.channel = new SubscriptionChannel(
      transport,
      {
        required: [RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV6_ROUTE],
        // Kernels without nexthop objects have neither the group nor routes that use one.
        optional: [RTNLGRP_NEXTHOP],
      },
      { onMessage: (msg) => this.onMessage(msg), onLost: (err) => this.lost(err) },
      rcvbuf,
      // Route notifications of other prefixes never reach JavaScript (point 6); with no
      // prefix at all, no native filter (the addon refuses an empty one) and the
      // JavaScript filter drops them all.
      this.prefixes.length > 0 ? encodeRouteFilter(RT_TABLE_MAIN, filterPrefixes) : undefined,
      // And in the kernel, before they take room in the receive buffer: a churn of other
      // routes cannot overflow it and force a re-dump of the whole table.
      program,
    );
    const unfiltered = this.channel.unfiltered ?? unbuilt;
    // After subscribe() has returned, as every other event.
    if (unfiltered)
      queueMicrotask(() => this.state !== 'closed' && this.emit({ kind: 'unfiltered', error: unfiltered }));
  }

  watches(label: string): boolean {
    return this.state !== 'closed' && this.byLabel.has(label);
  }

  get open(): boolean {
    return this.state !== 'closed' && !this.channel.deaf;
  }

  /** The links, from the last dump if no link or address notification came since (point 7). */
  links(dump: () => Promise<Link[]>): Promise<Link[]> {
    return this.kept(
      () => this.keptLinks,
      (v) => (this.keptLinks = v),
      dump,
    ).then((links) => links.map((l) => ({ ...l })));
  }

  /** The addresses, as links() keeps the links. */
  addresses(dump: () => Promise<InterfaceAddress[]>): Promise<InterfaceAddress[]> {
    return this.kept(
      () => this.keptAddresses,
      (v) => (this.keptAddresses = v),
      dump,
    ).then((addresses) => addresses.map((a) => ({ ...a })));
  }

  private async kept<T>(get: () => T[] | undefined, set: (v: T[]) => void, dump: () => Promise<T[]>): Promise<T[]> {
    // Whatever the kernel queued before this call (a change it acknowledged, or an
    // outside command's that returned) is seen now and drops what was kept.
    this.channel.drain();
    const held = get();
    if (held !== undefined && this.open) return held;
    const before = this.interfaceChanges;
    const dumped = await dump();
    // The notifications of changes made while the dump ran are queued by now.
    this.channel.drain();
    if (before === this.interfaceChanges && this.open) set(dumped);
    return dumped;
  }

  /**
   * A link or address notification, or a loss: what was kept may be stale. A link's
   * change drops the addresses too (the kernel removes those of a link deleted, and
   * IPv6 ones of a link going down).
   */
  private interfacesChanged(what: 'links' | 'addresses' = 'links'): void {
    this.interfaceChanges++;
    if (what === 'links') this.keptLinks = undefined;
    this.keptAddresses = undefined;
  }

  /** Remembers the indexes of the watched links, so that a rename away from a watched name is reported. */
  learnLinks(links: Link[]): void {
    for (const link of links) if (this.linkNames.has(link.name)) this.watchedIndexes.set(link.index, link.name);
  }

  /** The cached routes of these watched prefixes, seeding the cache first when it is dirty. */
  async read(labels: string[]): Promise<Map<string, DecodedRoute[]>> {
    this.channel.drain();
    let rows: ReadonlyMap<string, DecodedRoute[]> | undefined;
    if (this.state !== 'ready') {
      this.seeding ??= this.seed().finally(() => (this.seeding = undefined));
      rows = await this.seeding;
    }
    const fromCache = this.state === 'ready';
    return new Map(labels.map((l) => [l, fromCache || !rows ? this.cache.routes(l) : (rows.get(l) ?? [])]));
  }

  private async seed(): Promise<Map<string, DecodedRoute[]>> {
    this.state = 'seeding';
    this.pending = [];
    let dumped: Map<string, DecodedRoute[]>;
    try {
      dumped = await this.dumpRoutes(this.prefixes);
    } catch (err) {
      if (this.state === 'seeding') this.state = 'dirty';
      throw err;
    }
    // Everything the kernel queued before the dump's end joins `pending` now.
    this.channel.drain();
    const replay = this.pending;
    this.pending = [];
    // Still 'seeding' unless a loss (or close) came meanwhile; then this dump is only an answer.
    if (this.state === 'seeding' && !this.channel.deaf) {
      this.cache.reset(dumped);
      this.state = 'ready';
      for (const p of replay) if (this.state === 'ready') this.applyPending(p);
    } else if (this.state === 'seeding') this.state = 'dirty';
    return dumped;
  }

  private applyPending(p: Pending): void {
    if (p.kind === 'route') {
      if (!this.cache.apply(p.label, p.op, p.flags, p.route)) this.state = 'dirty';
      return;
    }
    const labels =
      p.kind === 'link-flush' ? this.cache.prefixesUsingLink(p.index) : this.cache.prefixesUsingNexthopObjects();
    if (labels.length === 0) return;
    this.state = 'dirty';
    for (const label of labels) this.emitRoute('del', label);
  }

  /** A change to the cache: queued while seeding, applied when ready, dropped when dirty (a re-dump follows). */
  private record(p: Pending): void {
    if (this.state === 'seeding') this.pending.push(p);
    else if (this.state === 'ready') this.applyPending(p);
  }

  private onMessage(msg: NetlinkMessage): void {
    if (this.state === 'closed') return;
    try {
      this.handle(msg);
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      this.lost(new NetlinkDecodeError(`notification type ${msg.type}: ${detail}`, { cause: err }));
    }
  }

  private handle(msg: NetlinkMessage): void {
    switch (msg.type) {
      case RTM_NEWROUTE:
      case RTM_DELROUTE: {
        // Matched on the raw header first: a busy node sends many route notifications.
        const label = this.filter.match(msg.data);
        if (label === undefined || routeTable(msg.data) !== RT_TABLE_MAIN) return;
        const route = decodeRoute(msg.data);
        const op = msg.type === RTM_NEWROUTE ? 'new' : 'del';
        this.record({ kind: 'route', label, op, flags: msg.flags, route });
        this.emitRoute(op, label);
        return;
      }
      case RTM_NEWLINK:
      case RTM_DELLINK: {
        this.interfacesChanged();
        const link = decodeLink(msg.data);
        const gone = msg.type === RTM_DELLINK;
        if (gone || !link.up) this.record({ kind: 'link-flush', index: link.index });
        const watched = this.linkNames.has(link.name) || this.watchedIndexes.has(link.index);
        if (this.linkNames.has(link.name) && !gone) this.watchedIndexes.set(link.index, link.name);
        else this.watchedIndexes.delete(link.index);
        if (watched) this.emit({ kind: 'link', op: gone ? 'del' : 'new', link });
        return;
      }
      case RTM_NEWADDR:
      case RTM_DELADDR: {
        this.interfacesChanged('addresses');
        const decoded = decodeAddress(msg.data);
        if (msg.type === RTM_DELADDR) this.record({ kind: 'link-flush', index: decoded.index });
        const address = toAddress(decoded);
        if (address) this.emit({ kind: 'address', op: msg.type === RTM_NEWADDR ? 'new' : 'del', address });
        return;
      }
      case RTM_NEWNEXTHOP:
      case RTM_DELNEXTHOP:
        this.record({ kind: 'nexthop-flush' });
        return;
      default:
        return;
    }
  }

  private lost(error: Error): void {
    if (this.state === 'closed') return;
    this.interfacesChanged();
    this.state = 'dirty';
    this.pending = [];
    this.emit({ kind: 'lost', error });
  }

  private emitRoute(op: 'new' | 'del', label: string): void {
    const family = this.byLabel.get(label)?.family;
    if (family) this.emit({ kind: 'route', op, family, prefix: label, table: RT_TABLE_MAIN });
  }

  /** The subscriber's exceptions are its own: rethrown outside the drain, which goes on. */
  private emit(event: DataplaneEvent): void {
    try {
      this.onEvent(event);
    } catch (err) {
      queueMicrotask(() => {
        throw err;
      });
    }
  }

  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.channel.close();
    this.onClose();
  }
}
