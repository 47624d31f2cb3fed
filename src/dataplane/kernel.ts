// The Dataplane on the real kernel over rtnetlink.
//
// How the routes of the watched prefixes are observed:
//  1. One strict-check dump of the main table per family. The kernel filters it by
//     table; rows are matched on destination from the raw header, and only matches
//     are decoded, so every main-table route of a prefix is found, whatever its
//     metric (two routes of one prefix must be seen to be left alone), and no answer
//     of another table (local, a policy table) is ever taken for the main table's.
//  2. A replace names the route's key (destination, table, priority) with
//     NLM_F_REPLACE and without NLM_F_CREATE: it swaps that very route atomically or
//     fails with ENOENT; it never creates one, and never adds one beside another.
// The dump walks the whole table on every pass: on a table of a million routes that
// is about a second (BENCHMARKS.md); an event-fed cache is the planned remedy.
import { addressFromBytes, parseAddress, parseCidr, type Cidr, type Family } from '../net/cidr.js';
import {
  AF_INET,
  AF_INET6,
  decodeAddress,
  decodeLink,
  decodeRoute,
  encodeAddressDump,
  encodeLinkDump,
  encodeRouteDump,
  encodeRouteReplace,
  routeDestination,
  routeMatchesPrefix,
  routeTable,
  RT_TABLE_MAIN,
  RTM_DELADDR,
  RTM_DELLINK,
  RTM_DELROUTE,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWROUTE,
  RTNLGRP_IPV4_IFADDR,
  RTNLGRP_IPV4_ROUTE,
  RTNLGRP_IPV6_IFADDR,
  RTNLGRP_IPV6_ROUTE,
  RTNLGRP_LINK,
  type DecodedRoute,
  type NetlinkMessage,
} from './codec.js';
import { RequestChannel, SubscriptionChannel } from './channel.js';
import { NetlinkError } from './errors.js';
import type { InterfaceAddress, Link, Route, RouteReplace, Watched } from '../core/route.js';
import type { Dataplane, DataplaneEvent, Subscription } from './types.js';

const MAX_DUMP_ATTEMPTS = 5;

const afOf = (family: Family) => (family === 4 ? AF_INET : AF_INET6);
const familyOf = (af: number): Family | undefined => (af === AF_INET ? 4 : af === AF_INET6 ? 6 : undefined);

export interface KernelDataplaneOptions {
  /** Receive buffer of the subscription socket. */
  subscriptionBuffer?: number;
  requestTimeoutMs?: number;
}

export class KernelDataplane implements Dataplane {
  private readonly requests: RequestChannel;

  constructor(private readonly options: KernelDataplaneOptions = {}) {
    this.requests = new RequestChannel(options.requestTimeoutMs);
  }

  /** A dump, retried while the kernel marks it interrupted (the table changed under it). */
  private async dump<T>(
    what: string,
    build: (seq: number, port: number) => Buffer,
    pick: (msg: NetlinkMessage) => T | undefined,
  ): Promise<T[]> {
    for (let attempt = 1; ; attempt++) {
      const items: T[] = [];
      const { interrupted } = await this.requests.exchange(what, build, (msg) => {
        const item = pick(msg);
        if (item !== undefined) items.push(item);
      });
      if (!interrupted) return items;
      if (attempt >= MAX_DUMP_ATTEMPTS) {
        throw new NetlinkError(4, `${what} (interrupted ${attempt} times in a row)`);
      }
    }
  }

  links(): Promise<Link[]> {
    return this.dump('dump links', encodeLinkDump, (msg) =>
      msg.type === RTM_NEWLINK ? decodeLink(msg.data) : undefined,
    );
  }

  addresses(): Promise<InterfaceAddress[]> {
    return this.dump('dump addresses', encodeAddressDump, (msg) =>
      msg.type === RTM_NEWADDR ? toAddress(msg.data) : undefined,
    );
  }

  async routes(prefixes: Cidr[], links: Link[]): Promise<Map<string, Route[]>> {
    const names = new Map(links.map((l) => [l.index, l.name]));
    const out = new Map<string, Route[]>(prefixes.map((p) => [p.text, []]));
    for (const family of [4, 6] as const) {
      const wanted = prefixes.filter((p) => p.family === family);
      if (wanted.length === 0) continue;
      const found = await this.dumpPrefixes(family, wanted);
      for (const [prefix, r] of found) out.get(prefix.text)!.push(toRoute(prefix, r, names));
    }
    return out;
  }

  private dumpPrefixes(family: Family, prefixes: Cidr[]): Promise<Array<[Cidr, DecodedRoute]>> {
    const af = afOf(family);
    return this.dump(
      `dump main-table IPv${family} routes for ${prefixes.map((p) => p.text).join(', ')}`,
      (seq, port) => encodeRouteDump(seq, port, af, RT_TABLE_MAIN),
      (msg) => {
        if (msg.type !== RTM_NEWROUTE || routeTable(msg.data) !== RT_TABLE_MAIN) return undefined;
        const prefix = prefixes.find((p) => routeMatchesPrefix(msg.data, af, p.bytes, p.length));
        return prefix ? ([prefix, decodeRoute(msg.data)] as [Cidr, DecodedRoute]) : undefined;
      },
    );
  }

  async replaceRoute(r: RouteReplace): Promise<void> {
    const prefix = parseCidr(r.key.prefix);
    const what = `route replace ${r.key.prefix} metric ${r.key.priority}`;
    if (r.to.gateway === null || r.to.oif === null) throw new NetlinkError(22, what, 'a replace needs a gateway and an output interface');
    const gateway = parseAddress(r.to.gateway);
    if (gateway.family !== prefix.family) throw new NetlinkError(22, what, `gateway ${r.to.gateway} is not IPv${prefix.family}`);
    await this.requests.exchange(
      `${what} via ${r.to.gateway}`,
      (seq, port) =>
        encodeRouteReplace(seq, port, {
          family: afOf(prefix.family),
          dst: prefix.bytes,
          dstLen: prefix.length,
          table: r.key.table,
          priority: r.key.priority,
          protocol: r.protocol,
          scope: r.scope,
          type: r.type,
          gateway: gateway.bytes,
          oif: r.to.oif!,
          mtu: r.to.mtu ?? undefined,
        }),
      () => undefined,
    );
  }

  subscribe(watched: Watched, onEvent: (event: DataplaneEvent) => void): Subscription {
    const groups = [RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV6_ROUTE];
    const prefixes = new Set(watched.prefixes.map((p) => p.text));
    const links = new Set(watched.links);
    return new SubscriptionChannel(
      groups,
      (msg) => {
        const event = toEvent(msg);
        if (!event) return;
        if (event.kind === 'route' && (event.table !== RT_TABLE_MAIN || !prefixes.has(event.prefix))) return;
        if (event.kind === 'link' && !links.has(event.link.name)) return;
        onEvent(event);
      },
      (error) => onEvent({ kind: 'lost', error }),
      { rcvbuf: this.options.subscriptionBuffer },
    );
  }

  close(): void {
    this.requests.close();
  }
}

function toAddress(payload: Buffer): InterfaceAddress | undefined {
  const a = decodeAddress(payload);
  const family = familyOf(a.family);
  if (!family || !a.address) return undefined;
  return { linkIndex: a.index, family, address: addressFromBytes(a.address).text, prefixLength: a.prefixLength, tentative: a.tentative, dadFailed: a.dadFailed };
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
    multipath: r.multipath,
  };
}

function toEvent(msg: NetlinkMessage): DataplaneEvent | undefined {
  switch (msg.type) {
    case RTM_NEWLINK:
    case RTM_DELLINK:
      return { kind: 'link', op: msg.type === RTM_NEWLINK ? 'new' : 'del', link: decodeLink(msg.data) };
    case RTM_NEWADDR:
    case RTM_DELADDR: {
      const address = toAddress(msg.data);
      return address && { kind: 'address', op: msg.type === RTM_NEWADDR ? 'new' : 'del', address };
    }
    case RTM_NEWROUTE:
    case RTM_DELROUTE: {
      // Route events are decoded only as far as the agent needs (prefix and table):
      // a busy node can send many, and the agent re-observes what they concern.
      const family = familyOf(msg.data[0] ?? 0);
      const dstLen = msg.data[1] ?? 0;
      if (!family) return undefined;
      const network = routeDestination(msg.data) ?? Buffer.alloc(family === 4 ? 4 : 16);
      return {
        kind: 'route',
        op: msg.type === RTM_NEWROUTE ? 'new' : 'del',
        family,
        prefix: `${addressFromBytes(network).text}/${dstLen}`,
        table: routeTable(msg.data),
      };
    }
    default:
      return undefined;
  }
}
