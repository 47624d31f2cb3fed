// The Dataplane on the real kernel over rtnetlink.
//
// What routes() answers, and how it avoids reading a million-route table per pass:
//  1. Every main-table route whose destination is exactly the prefix, whatever its
//     metric, type or protocol: the kernel's own rows, decoded field by field.
//  2. Prefixes watched by an open subscription are answered from that subscription's
//     cache (route-cache.ts): one strict-check dump of the main table per family,
//     sent only after the subscription socket joined its groups, so that no change
//     falls between the dump and the notifications; the notifications that arrive
//     while the dump runs are queued and replayed on its rows (route-cache.ts says
//     why replaying is safe, and re-dumps where it is not). In steady state a pass
//     sends no dump at all.
//  3. Before reading the cache, the subscription socket is drained. The kernel queues
//     a route's multicast notification before it answers the request that changed
//     it, so a change this process saw acknowledged, or that an outside `ip route`
//     made before it returned, is in the cache when routes() reads it.
//  4. After `lost` (ENOBUFS: the kernel dropped notifications) the cache is dirty; the
//     next routes() re-dumps. A call whose dump was overtaken by another loss answers
//     from its own dump, which is as fresh as a one-shot read, and leaves the cache
//     dirty for the next call.
//  5. Routes that vanish without RTM_DELROUTE: IPv4 routes through a link that goes
//     down, is deleted or loses its last address, and IPv4 routes through a deleted
//     nexthop object, are flushed by the kernel silently. Such an event for a link or
//     nexthop a cached route depends on makes the cache dirty and is reported to the
//     subscriber as a `del` route event of each prefix concerned.
//  6. Prefixes no subscription watches (and every prefix of the one-shot `plan` and
//     `apply` commands) are read with one header-filtered dump per family and call,
//     as `ip route show` does: rows are matched on family, length and RTA_DST from
//     the raw bytes, and only matches are decoded. The native socket drops the other
//     route messages of a dump, and of the subscription's notifications, before they
//     reach JavaScript (native/src/netlink_socket.c, point 8; channel.ts, guarantee 6):
//     on a table of 1,000,000 routes, JavaScript then reads a handful of messages.
//  7. Links and addresses, while a subscription is open, are answered from the last
//     dump of each, made after the subscription socket joined the link and address
//     groups; any link notification (of any link, any family) or loss drops both, any
//     address notification the addresses, and the next call dumps again. The socket
//     is drained before the answer (point 3), and a dump during which such a
//     notification arrived is returned but not kept. So a pass woken by a route event
//     alone sends no dump at all, and nothing is inferred from a notification's
//     content: the dump is the only source.
//  8. Not "ip route get fibmatch": it returns only the route in use, not a second
//     route of the prefix with another metric; on IPv4 without policy rules the local
//     table shares the main table's trie and a local answer says "table main"
//     (`ip route get fibmatch 127.0.0.0` gives `local 127.0.0.0/8 dev lo table main`);
//     and 0.0.0.0 cannot be looked up at all. It can be neither the answer nor a
//     trustworthy cross-check of the cache.
//
// replaceRoute() sends NLM_F_REPLACE without NLM_F_CREATE: it swaps the route with
// exactly that key or fails with ENOENT; it never creates one, in either family.
//
// subscribe() delivers route events of the watched prefixes in the main table, link
// events of the watched link names (and of a watched link renamed away, by its index
// as seen in events and link dumps), every address event, and `lost`. Dumps the kernel marks interrupted (NLM_F_DUMP_INTR,
// the table changed under them) are retried, MAX_DUMP_ATTEMPTS times in all.
import type { InterfaceAddress, Link, Route, RouteReplace, Watched } from '../core/route.js';
import { addressFromBytes, parseAddress, parseCidr, type Cidr, type Family } from '../net/cidr.js';
import { RequestChannel, SubscriptionChannel } from './channel.js';
import { routeSocketFilter } from './socket-filter.js';
import {
  AF_INET,
  AF_INET6,
  decodeAddress,
  decodeLink,
  decodeRoute,
  encodeAddressDump,
  encodeLinkDump,
  encodeRouteDump,
  encodeRouteFilter,
  encodeRouteReplace,
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
  type DecodedAddress,
  type DecodedRoute,
  type FilterPrefix,
  type NetlinkMessage,
} from './codec.js';
import { NetlinkDecodeError, NetlinkError } from './errors.js';
import { RouteCache } from './route-cache.js';
import { nativeTransport, type NetlinkTransport } from './transport.js';
import type { Dataplane, DataplaneEvent, Subscription } from './types.js';

export const MAX_DUMP_ATTEMPTS = 5;
const EINTR = 4;
const ENODEV = 19;
const EINVAL = 22;

const afOf = (family: Family) => (family === 4 ? AF_INET : AF_INET6);
const familyOf = (af: number): Family | undefined => (af === AF_INET ? 4 : af === AF_INET6 ? 6 : undefined);

export interface KernelDataplaneOptions {
  /** The netlink sockets; the real kernel unless a test injects a fake. */
  transport?: NetlinkTransport;
  /** Receive buffer of a subscription socket. */
  subscriptionBuffer?: number;
  requestTimeoutMs?: number;
}

export class KernelDataplane implements Dataplane {
  private readonly transport: NetlinkTransport;
  private readonly requests: RequestChannel;
  private readonly subscriptions = new Set<WatchedSubscription>();

  constructor(private readonly options: KernelDataplaneOptions = {}) {
    this.transport = options.transport ?? nativeTransport;
    this.requests = new RequestChannel(this.transport, options.requestTimeoutMs);
  }

  /** A dump, retried while the kernel marks it interrupted (the table changed under it). */
  private async dump(
    what: string,
    build: (seq: number, port: number) => Buffer,
    onMessage: (msg: NetlinkMessage) => void,
    reset: () => void,
    routeFilter?: Buffer,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      reset();
      const { interrupted } = await this.requests.exchange(what, build, onMessage, routeFilter);
      if (!interrupted) return;
      if (attempt >= MAX_DUMP_ATTEMPTS) throw new NetlinkError(EINTR, `${what} (interrupted ${attempt} times in a row)`);
    }
  }

  private async dumpList<T>(
    what: string,
    build: (seq: number, port: number) => Buffer,
    pick: (msg: NetlinkMessage) => T | undefined,
  ): Promise<T[]> {
    let items: T[] = [];
    await this.dump(
      what,
      build,
      (msg) => {
        const item = pick(msg);
        if (item !== undefined) items.push(item);
      },
      () => (items = []),
    );
    return items;
  }

  /** An open subscription that can keep links and addresses (point 7). */
  private interfaceKeeper(): WatchedSubscription | undefined {
    for (const sub of this.subscriptions) if (sub.open) return sub;
    return undefined;
  }

  async links(): Promise<Link[]> {
    const dump = () =>
      this.dumpList('dump links', encodeLinkDump, (msg) => (msg.type === RTM_NEWLINK ? decodeLink(msg.data) : undefined));
    const keeper = this.interfaceKeeper();
    const links = keeper ? await keeper.links(dump) : await dump();
    for (const sub of this.subscriptions) sub.learnLinks(links);
    return links;
  }

  addresses(): Promise<InterfaceAddress[]> {
    const dump = () =>
      this.dumpList('dump addresses', encodeAddressDump, (msg) =>
        msg.type === RTM_NEWADDR ? toAddress(decodeAddress(msg.data)) : undefined,
      );
    const keeper = this.interfaceKeeper();
    return keeper ? keeper.addresses(dump) : dump();
  }

  /**
   * The main-table routes of `prefixes` from one strict-check dump per family,
   * keyed by Cidr.text. Only rows whose raw destination matches are decoded.
   */
  private async dumpRoutes(prefixes: readonly Cidr[]): Promise<Map<string, DecodedRoute[]>> {
    const found = new Map<string, DecodedRoute[]>(prefixes.map((p) => [p.text, []]));
    for (const family of [4, 6] as const) {
      const mine = prefixes.filter((p) => p.family === family);
      if (mine.length === 0) continue;
      const filter = prefixFilterOf(mine);
      const nativeFilter = encodeRouteFilter(RT_TABLE_MAIN, filterPrefixesOf(mine));
      const af = afOf(family);
      await this.dump(
        `dump main-table IPv${family} routes for ${mine.map((p) => p.text).join(', ')}`,
        (seq, port) => encodeRouteDump(seq, port, af, RT_TABLE_MAIN),
        (msg) => {
          if (msg.type !== RTM_NEWROUTE) return;
          const label = filter.match(msg.data);
          if (label === undefined || routeTable(msg.data) !== RT_TABLE_MAIN) return;
          found.get(label)?.push(decodeRoute(msg.data));
        },
        () => mine.forEach((p) => found.set(p.text, [])),
        nativeFilter,
      );
    }
    return found;
  }

  async routes(prefixes: Cidr[], links: Link[]): Promise<Map<string, Route[]>> {
    const unique = [...new Map(prefixes.map((p) => [p.text, p])).values()];
    const decoded = new Map<string, DecodedRoute[]>();
    const unwatched: Cidr[] = [];
    const bySubscription = new Map<WatchedSubscription, string[]>();
    for (const prefix of unique) {
      const sub = [...this.subscriptions].find((s) => s.watches(prefix.text));
      if (sub) bySubscription.set(sub, [...(bySubscription.get(sub) ?? []), prefix.text]);
      else unwatched.push(prefix);
    }
    for (const [sub, labels] of bySubscription) {
      for (const [label, rows] of await sub.read(labels)) decoded.set(label, rows);
    }
    if (unwatched.length > 0) {
      for (const [label, rows] of await this.dumpRoutes(unwatched)) decoded.set(label, rows);
    }
    const names = new Map(links.map((l) => [l.index, l.name]));
    return new Map(unique.map((p) => [p.text, (decoded.get(p.text) ?? []).map((r) => toRoute(p, r, names))]));
  }

  async replaceRoute(replace: RouteReplace): Promise<void> {
    const { key, to } = replace;
    const prefix = parseCidr(key.prefix);
    const what = `route replace ${prefix.text} metric ${key.priority}`;
    const gateway = to.gateway === null ? undefined : parseAddress(to.gateway);
    if (prefix.family !== key.family || (gateway && gateway.family !== prefix.family)) {
      const detail = `route ${prefix.text} is IPv${prefix.family}, key says IPv${key.family}, gateway ${to.gateway}`;
      throw new NetlinkError(EINVAL, what, detail);
    }
    let oif = to.oif ?? undefined;
    if (oif === undefined && to.dev !== null) {
      oif = (await this.links()).find((l) => l.name === to.dev)?.index;
      if (oif === undefined) throw new NetlinkError(ENODEV, what, `no link named ${to.dev}`);
    }
    await this.requests.exchange(
      `${what} to ${[gateway && `via ${gateway.text}`, to.dev && `dev ${to.dev}`].filter(Boolean).join(' ')}`,
      (seq, port) =>
        encodeRouteReplace(seq, port, {
          family: afOf(prefix.family),
          dst: prefix.length === 0 ? undefined : prefix.bytes,
          dstLen: prefix.length,
          table: key.table,
          tos: 0,
          priority: key.priority,
          protocol: replace.protocol,
          scope: replace.scope,
          type: replace.type,
          gateway: gateway?.bytes,
          oif,
          mtu: to.mtu ?? undefined,
        }),
      () => undefined,
    );
  }

  subscribe(watched: Watched, onEvent: (event: DataplaneEvent) => void): Subscription {
    const sub = new WatchedSubscription(
      this.transport,
      watched,
      onEvent,
      (prefixes) => this.dumpRoutes(prefixes),
      () => this.subscriptions.delete(sub),
      this.options.subscriptionBuffer,
    );
    this.subscriptions.add(sub);
    return sub;
  }

  close(): void {
    for (const sub of this.subscriptions) sub.close();
    this.requests.close();
  }
}

function filterPrefixesOf(prefixes: readonly Cidr[]): FilterPrefix[] {
  return prefixes.map((p) => ({ af: afOf(p.family), length: p.length, bytes: p.bytes, label: p.text }));
}

function prefixFilterOf(prefixes: readonly Cidr[]): PrefixFilter {
  return new PrefixFilter(filterPrefixesOf(prefixes));
}

type Pending =
  | { kind: 'route'; label: string; op: 'new' | 'del'; flags: number; route: DecodedRoute }
  | { kind: 'link-flush'; index: number }
  | { kind: 'nexthop-flush' };

/**
 * One subscription: its socket, its event filter, and the route cache of its
 * prefixes, and its kept links and addresses (points 2 to 5 and 7 of the header).
 */
class WatchedSubscription implements Subscription {
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
        unbuilt = new Error(`no kernel-side filter for ${this.prefixes.length} watched prefixes: its program would exceed 4,096 instructions`);
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
    if (unfiltered) queueMicrotask(() => this.state !== 'closed' && this.emit({ kind: 'unfiltered', error: unfiltered }));
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

function toAddress(a: DecodedAddress): InterfaceAddress | undefined {
  const family = familyOf(a.family);
  if (!family || !a.address) return undefined;
  return {
    linkIndex: a.index,
    family,
    address: addressFromBytes(a.address).text,
    prefixLength: a.prefixLength,
    tentative: a.tentative,
    dadFailed: a.dadFailed,
  };
}

function toRoute(prefix: Cidr, r: DecodedRoute, names: Map<number, string>): Route {
  return {
    key: { prefix: prefix.text, family: prefix.family, table: r.table, priority: r.priority },
    nextHop: {
      dev: r.oif === undefined ? null : (names.get(r.oif) ?? null),
      oif: r.oif ?? null,
      gateway: r.gateway ? addressFromBytes(r.gateway).text : null,
      mtu: r.mtu ?? null,
    },
    protocol: r.protocol,
    scope: r.scope,
    type: r.type,
    tos: r.tos,
    multipath: r.nexthops !== undefined,
    unmodelled: r.unmodelled,
  };
}
