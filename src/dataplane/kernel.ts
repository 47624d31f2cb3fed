// The Dataplane on the real kernel over rtnetlink: links are asked for by name, addresses and routes
// read by dumps, as `ip` does, and nothing is cached (a notification only wakes a pass, which reads).
// routes() is one strict-check dump of the main table, rows picked from the raw bytes by PrefixFilter:
// not "ip route get fibmatch", which returns only the route in use (not a second one of the prefix
// with another metric), nor 0.0.0.0.
// Guarantees (1 to 4, of the socket: channel.ts), and the races they answer:
//  5. The kernel flushes some routes without RTM_DELROUTE (IPv4 routes through a link that goes down,
//     is deleted or loses an address; routes through a deleted nexthop object): a subscription
//     reports a `del` for each prefix whose last read used them.
//  6. A watched link renamed away is still reported, by the index learnt from the last read of it.
import type { InterfaceAddress, Link, Route, RouteReplace, Watched } from '../core/route.js';
import { addressFromBytes, parseAddress, parseCidr, type Cidr, type Family } from '../net/cidr.js';
import { drain, EINTR, EINVAL, ENODEV, MAX_DUMP_ATTEMPTS, nativeTransport, RequestChannel } from './channel.js';
import type { NetlinkSocket, NetlinkTransport } from './channel.js';
import * as nl from './codec.js';
import { NetlinkDecodeError, NetlinkError } from './errors.js';
import type { Dataplane, DataplaneEvent, Subscription } from './types.js';

const familyOf = (af: number): Family | undefined => (af === nl.AF_INET ? 4 : af === nl.AF_INET6 ? 6 : undefined);
/** One family, or both (AF_UNSPEC): an IPv4 node's dumps skip each pod veth's IPv6 link-local address and route. */
const dumpFamily = (families: readonly Family[]): number =>
  families.every((f) => f === 4) ? nl.AF_INET : families.every((f) => f === 6) ? nl.AF_INET6 : nl.AF_UNSPEC;

function toAddress(a: nl.DecodedAddress): InterfaceAddress | undefined {
  const family = familyOf(a.family);
  if (!family || !a.address) return undefined;
  const { index: linkIndex, prefixLength, tentative, dadFailed } = a;
  return { linkIndex, family, address: addressFromBytes(a.address).text, prefixLength, tentative, dadFailed };
}

function toRoute(prefix: Cidr, r: nl.DecodedRoute, names: Map<number, string>): Route {
  const { table, priority, oif, protocol, scope, type, tos, unmodelled } = r;
  const key = { prefix: prefix.text, family: prefix.family, table, priority };
  const dev = oif === undefined ? null : (names.get(oif) ?? null);
  const gateway = r.gateway ? addressFromBytes(r.gateway).text : null;
  const nextHop = { dev, oif: oif ?? null, gateway, mtu: r.mtu ?? null };
  return { key, nextHop, protocol, scope, type, tos, multipath: r.nexthops !== undefined, unmodelled };
}

/** What the routes of a watched prefix went through at the last read (guarantee 5). */
type Uses = { oifs: number[]; nexthopObject: boolean };

class WatchedSubscription implements Subscription {
  private readonly socket: NetlinkSocket;
  private readonly families: Map<string, Family>;
  private readonly filter: nl.PrefixFilter;
  private readonly linkNames: Set<string>;
  /** Index -> name of links that bore a watched name (guarantee 6). */
  private readonly watchedIndexes = new Map<number, string>();
  readonly uses = new Map<string, Uses>();
  closed = false;

  constructor(
    transport: NetlinkTransport,
    watched: Watched,
    private readonly onEvent: (event: DataplaneEvent) => void,
    private readonly onClose: () => void,
    rcvbuf = 1 << 20,
  ) {
    this.families = new Map(watched.prefixes.map((p) => [p.text, p.family]));
    this.filter = new nl.PrefixFilter(watched.prefixes);
    this.linkNames = new Set(watched.links);
    this.socket = transport.open(
      {
        groups: [
          nl.RTNLGRP_LINK,
          nl.RTNLGRP_IPV4_IFADDR,
          nl.RTNLGRP_IPV4_ROUTE,
          nl.RTNLGRP_IPV6_IFADDR,
          nl.RTNLGRP_IPV6_ROUTE,
        ],
        // Kernels without nexthop objects have neither the group nor routes that use one.
        optionalGroups: [nl.RTNLGRP_NEXTHOP],
        rcvbuf,
      },
      (_status, rearm) => {
        if (rearm < 0) this.lost(new NetlinkError(-rearm, 'uv_poll_start (subscription socket)'));
        drain(this.socket, () => !this.closed, this.lost, this.onMessage);
      },
    );
  }

  private readonly lost = (error: Error): void => this.emit({ kind: 'lost', error });

  learnLinks(links: Link[]): void {
    for (const link of links) if (this.linkNames.has(link.name)) this.watchedIndexes.set(link.index, link.name);
  }

  learnRoutes(prefix: string, routes: nl.DecodedRoute[]): void {
    if (!this.families.has(prefix)) return;
    const oifs = routes.flatMap((r) => [r.oif, ...(r.nexthops ?? []).map((h) => h.oif)]).filter((o) => o !== undefined);
    this.uses.set(prefix, { oifs, nexthopObject: routes.some((r) => r.nhid !== undefined) });
  }

  private readonly onMessage = (msg: nl.NetlinkMessage): void => {
    try {
      this.handle(msg);
    } catch (err) {
      this.lost(new NetlinkDecodeError(`notification type ${msg.type}: ${(err as Error).message}`, { cause: err }));
    }
  };

  private handle(msg: nl.NetlinkMessage): void {
    switch (msg.type) {
      case nl.RTM_NEWROUTE:
      case nl.RTM_DELROUTE: {
        const prefix = this.filter.match(msg.data);
        if (prefix !== undefined) this.emitRoute(msg.type === nl.RTM_NEWROUTE ? 'new' : 'del', prefix);
        return;
      }
      case nl.RTM_NEWLINK:
      case nl.RTM_DELLINK: {
        const link = nl.decodeLink(msg.data);
        const gone = msg.type === nl.RTM_DELLINK;
        if (gone || !link.up) this.flushed((u) => u.oifs.includes(link.index));
        const watched = this.linkNames.has(link.name) || this.watchedIndexes.has(link.index);
        if (this.linkNames.has(link.name) && !gone) this.watchedIndexes.set(link.index, link.name);
        else this.watchedIndexes.delete(link.index);
        if (watched) this.emit({ kind: 'link', op: gone ? 'del' : 'new', link });
        return;
      }
      case nl.RTM_NEWADDR:
      case nl.RTM_DELADDR: {
        const decoded = nl.decodeAddress(msg.data);
        if (msg.type === nl.RTM_DELADDR) this.flushed((u) => u.oifs.includes(decoded.index));
        const address = toAddress(decoded);
        if (address) this.emit({ kind: 'address', op: msg.type === nl.RTM_NEWADDR ? 'new' : 'del', address });
        return;
      }
      case nl.RTM_NEWNEXTHOP:
      case nl.RTM_DELNEXTHOP:
        this.flushed((u) => u.nexthopObject);
    }
  }

  private flushed(used: (u: Uses) => boolean): void {
    for (const [prefix, u] of this.uses) if (used(u)) this.emitRoute('del', prefix);
  }

  private emitRoute(op: 'new' | 'del', prefix: string): void {
    const family = this.families.get(prefix);
    if (family) this.emit({ kind: 'route', op, family, prefix, table: nl.RT_TABLE_MAIN });
  }

  /** The subscriber's exceptions are its own: rethrown outside the drain, which goes on. */
  private emit(event: DataplaneEvent): void {
    if (this.closed) return;
    try {
      this.onEvent(event);
    } catch (err) {
      queueMicrotask(() => {
        throw err;
      });
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.close();
    this.onClose();
  }
}

export interface KernelDataplaneOptions {
  /** A test's fake kernel. */
  transport?: NetlinkTransport;
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

  /** A dump's items, the dump retried while the kernel marks it interrupted (the table changed under it). */
  private async dump<T>(
    what: string,
    build: (seq: number, port: number) => Buffer,
    pick: (msg: nl.NetlinkMessage) => T | undefined,
    skip?: nl.Skip,
  ): Promise<T[]> {
    for (let attempt = 1; ; attempt++) {
      const items: T[] = [];
      const onMessage = (msg: nl.NetlinkMessage) => {
        const item = pick(msg);
        if (item !== undefined) items.push(item);
      };
      if (!(await this.requests.exchange(what, build, onMessage, skip)).interrupted) return items;
      if (attempt >= MAX_DUMP_ATTEMPTS)
        throw new NetlinkError(EINTR, `${what} (interrupted ${attempt} times in a row)`);
    }
  }

  /**
   * The links of these names that exist, each asked of the kernel by name: a node has a veth per pod,
   * and a dump decoded them all (docs/benchmarks.md).
   */
  async links(names: readonly string[]): Promise<Link[]> {
    const found = await Promise.all([...new Set(names)].map((name) => this.link({ name })));
    const links = found.filter((l) => l !== undefined);
    for (const sub of this.subscriptions) sub.learnLinks(links);
    return links;
  }

  private async link(which: { index: number } | { name: string }): Promise<Link | undefined> {
    let link: Link | undefined;
    const what = 'name' in which ? `get link ${which.name}` : `get link ${which.index}`;
    const build = (seq: number, port: number) => nl.encodeLinkGet(seq, port, which);
    try {
      await this.requests.exchange(what, build, (msg) => {
        if (msg.type === nl.RTM_NEWLINK) link = nl.decodeLink(msg.data);
      });
    } catch (err) {
      if (err instanceof NetlinkError && err.errno === ENODEV) return undefined;
      throw err;
    }
    // The kernel also answers for an alternative name (`ip link property add altname`): the agent's
    // names are link names, as they were when every link was dumped.
    return link && ('index' in which || link.name === which.name) ? link : undefined;
  }

  /** The addresses of these links; every other link's is skipped undecoded (a pod's veth has one). */
  addresses(links: readonly Link[], families: readonly Family[] = [4, 6]): Promise<InterfaceAddress[]> {
    const wanted = new Set(links.map((l) => l.index));
    return this.dump(
      'dump addresses',
      (seq, port) => nl.encodeAddressDump(seq, port, dumpFamily(families)),
      (msg) => {
        const address = msg.type === nl.RTM_NEWADDR ? toAddress(nl.decodeAddress(msg.data)) : undefined;
        return address && wanted.has(address.linkIndex) ? address : undefined;
      },
      (type, d, at) => type === nl.RTM_NEWADDR && !wanted.has(nl.addressIndex(d, at)),
    );
  }

  async routes(prefixes: Cidr[], links: Link[]): Promise<Map<string, Route[]>> {
    const unique = [...new Map(prefixes.map((p) => [p.text, p])).values()];
    const found = new Map(unique.map((p) => [p.text, { prefix: p, rows: [] as nl.DecodedRoute[] }]));
    const filter = new nl.PrefixFilter(unique);
    const rows =
      unique.length === 0
        ? []
        : await this.dump(
            `dump main-table routes for ${unique.map((p) => p.text).join(', ')}`,
            (seq, port) => nl.encodeRouteDump(seq, port, dumpFamily(unique.map((p) => p.family)), nl.RT_TABLE_MAIN),
            (msg) => {
              const prefix = msg.type === nl.RTM_NEWROUTE ? filter.match(msg.data) : undefined;
              return prefix === undefined ? undefined : { prefix, row: nl.decodeRoute(msg.data) };
            },
            (type, d, at) => type === nl.RTM_NEWROUTE && !filter.mayMatch(d, at),
          );
    for (const { prefix, row } of rows) found.get(prefix)?.rows.push(row);
    for (const sub of this.subscriptions) for (const [prefix, f] of found) sub.learnRoutes(prefix, f.rows);
    const names = new Map(links.map((l) => [l.index, l.name]));
    // A route through a device not asked for (rare): its name, for what the status says of it.
    const unknown = new Set(rows.flatMap(({ row }) => (row.oif === undefined || names.has(row.oif) ? [] : [row.oif])));
    for (const index of unknown) {
      const name = (await this.link({ index }))?.name;
      if (name !== undefined) names.set(index, name);
    }
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
      oif = (await this.links([to.dev]))[0]?.index;
      if (oif === undefined) throw new NetlinkError(ENODEV, what, `no link named ${to.dev}`);
    }
    const message: nl.RouteMessage = {
      family: prefix.family === 4 ? nl.AF_INET : nl.AF_INET6,
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
    };
    const target = [gateway && `via ${gateway.text}`, to.dev && `dev ${to.dev}`].filter(Boolean).join(' ');
    await this.requests.exchange(
      `${what} to ${target}`,
      (seq, port) => nl.encodeRouteReplace(seq, port, message),
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
