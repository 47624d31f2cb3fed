// The Dataplane on the real kernel over rtnetlink: every read is a dump, as `ip` does.
//
// What routes() answers: every main-table route whose destination is exactly the
// prefix, whatever its metric, type or protocol: the kernel's own rows, decoded field by
// field. One strict-check dump of both families per call (the kernel applies the table
// filter, never a destination filter); rows are matched on family, length and RTA_DST from the
// raw bytes (PrefixFilter, convert.ts) and only matches are decoded. Nothing is cached:
// a notification only wakes a pass (subscription.ts), and the pass reads the kernel, so
// no notification is ever replayed, merged or lost into a stale answer.
//
// Not "ip route get fibmatch": it returns only the route in use, not a second route of
// the prefix with another metric; on IPv4 without policy rules the local table shares
// the main table's trie and a local answer says "table main"; and 0.0.0.0 cannot be
// looked up at all.
//
// replaceRoute() sends NLM_F_REPLACE without NLM_F_CREATE: it swaps the route with
// exactly that key or fails with ENOENT; it never creates one, in either family.
//
// Dumps the kernel marks interrupted (NLM_F_DUMP_INTR, the table changed under them)
// are retried, MAX_DUMP_ATTEMPTS times in all.
import type { InterfaceAddress, Link, Route, RouteReplace, Watched } from '../core/route.js';
import { parseAddress, parseCidr, type Cidr } from '../net/cidr.js';
import { RequestChannel } from './channel.js';
import {
  decodeAddress,
  decodeLink,
  AF_UNSPEC,
  decodeRoute,
  encodeAddressDump,
  encodeLinkDump,
  encodeRouteDump,
  encodeRouteReplace,
  RT_TABLE_MAIN,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWROUTE,
  type DecodedRoute,
  type NetlinkMessage,
} from './codec.js';
import { afOf, PrefixFilter, toAddress, toRoute } from './convert.js';
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
    skip?: (type: number, datagram: Buffer, payload: number) => boolean,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      reset();
      const { interrupted } = await this.requests.exchange(what, build, onMessage, skip);
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

  async links(): Promise<Link[]> {
    const links = await this.dumpList('dump links', encodeLinkDump, (msg) =>
      msg.type === RTM_NEWLINK ? decodeLink(msg.data) : undefined,
    );
    for (const sub of this.subscriptions) sub.learnLinks(links);
    return links;
  }

  addresses(): Promise<InterfaceAddress[]> {
    return this.dumpList('dump addresses', encodeAddressDump, (msg) =>
      msg.type === RTM_NEWADDR ? toAddress(decodeAddress(msg.data)) : undefined,
    );
  }

  async routes(prefixes: Cidr[], links: Link[]): Promise<Map<string, Route[]>> {
    const unique = [...new Map(prefixes.map((p) => [p.text, p])).values()];
    const found = new Map<string, { prefix: Cidr; rows: DecodedRoute[] }>(
      unique.map((p) => [p.text, { prefix: p, rows: [] }]),
    );
    const filter = new PrefixFilter(unique);
    if (unique.length > 0) {
      await this.dump(
        `dump main-table routes for ${unique.map((p) => p.text).join(', ')}`,
        (seq, port) => encodeRouteDump(seq, port, AF_UNSPEC, RT_TABLE_MAIN),
        (msg) => {
          const prefix = msg.type === RTM_NEWROUTE ? filter.match(msg.data) : undefined;
          if (prefix !== undefined) found.get(prefix)?.rows.push(decodeRoute(msg.data));
        },
        () => found.forEach((f) => (f.rows = [])),
        (type, d, at) => type === RTM_NEWROUTE && !filter.mayMatch(d, at),
      );
    }
    for (const sub of this.subscriptions) for (const [prefix, f] of found) sub.learnRoutes(prefix, f.rows);
    const names = new Map(links.map((l) => [l.index, l.name]));
    return new Map([...found].map(([text, f]) => [text, f.rows.map((r) => toRoute(f.prefix, r, names))]));
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
