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
// subscribe() (subscription.ts) delivers route events of the watched prefixes in the main table, link
// events of the watched link names (and of a watched link renamed away, by its index
// as seen in events and link dumps), every address event, and `lost`. Dumps the kernel marks interrupted (NLM_F_DUMP_INTR,
// the table changed under them) are retried, MAX_DUMP_ATTEMPTS times in all.
import type { InterfaceAddress, Link, Route, RouteReplace, Watched } from '../core/route.js';
import { parseAddress, parseCidr, type Cidr } from '../net/cidr.js';
import { RequestChannel } from './channel.js';
import {
  decodeAddress,
  decodeLink,
  decodeRoute,
  encodeAddressDump,
  encodeLinkDump,
  encodeRouteDump,
  encodeRouteFilter,
  encodeRouteReplace,
  routeTable,
  RT_TABLE_MAIN,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWROUTE,
  type DecodedRoute,
  type NetlinkMessage,
} from './codec.js';
import { afOf, filterPrefixesOf, prefixFilterOf, toAddress, toRoute } from './convert.js';
import { NetlinkError } from './errors.js';
import { WatchedSubscription } from './subscription.js';
import { nativeTransport, type NetlinkTransport } from './transport.js';
import type { Dataplane, DataplaneEvent, Subscription } from './types.js';

export const MAX_DUMP_ATTEMPTS = 5;
const EINTR = 4;
const ENODEV = 19;
const EINVAL = 22;

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
      if (attempt >= MAX_DUMP_ATTEMPTS)
        throw new NetlinkError(EINTR, `${what} (interrupted ${attempt} times in a row)`);
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
      this.dumpList('dump links', encodeLinkDump, (msg) =>
        msg.type === RTM_NEWLINK ? decodeLink(msg.data) : undefined,
      );
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
