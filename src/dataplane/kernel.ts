// The Dataplane on the real kernel over rtnetlink.
//
// How a service prefix is observed without parsing the whole table (issue #2):
//  1. "ip route get fibmatch <network address>": one trie lookup in the kernel, one
//     message back. When the entry that matched is in the main table and has exactly
//     our destination and length, that is the route the kernel uses for the prefix.
//  2. Otherwise (a more specific route covers the network address, no route matched,
//     a policy rule sent the lookup to another table, or the lookup skipped an entry,
//     e.g. an unreachable-type route), a strict-check
//     dump of the main table of that family. The kernel filters it by table; rows
//     are matched on destination from the raw header, and only matches are decoded.
// Step 1 reports the route in effect; a second route of the same prefix with a
// higher metric is not reported by it (it carries no traffic).
import { addressFromBytes, parseAddress, type Cidr, type Family } from '../net/cidr.js';
import {
  AF_INET,
  AF_INET6,
  decodeAddress,
  decodeLink,
  decodeRoute,
  encodeAddressDump,
  encodeFibMatch,
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
import type {
  Dataplane,
  DataplaneEvent,
  InterfaceAddress,
  KernelRoute,
  Link,
  RouteReplace,
  Subscription,
} from './types.js';

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

  async routesFor(prefix: Cidr, links?: Link[]): Promise<KernelRoute[]> {
    const raw = (await this.fibMatch(prefix)) ?? (await this.dumpPrefix(prefix));
    if (raw.length === 0) return [];
    const names = new Map((links ?? (await this.links())).map((l) => [l.index, l.name]));
    return raw.map((r) => toKernelRoute(prefix, r, names));
  }

  private async fibMatch(prefix: Cidr): Promise<DecodedRoute[] | undefined> {
    let matched: DecodedRoute | undefined;
    try {
      await this.requests.exchange(
        `route get fibmatch ${prefix.text}`,
        (seq, port) => encodeFibMatch(seq, port, afOf(prefix.family), prefix.bytes),
        (msg) => {
          if (msg.type === RTM_NEWROUTE && routeMatchesPrefix(msg.data, afOf(prefix.family), prefix.bytes, prefix.length)) {
            matched = decodeRoute(msg.data);
          }
        },
      );
    } catch (err) {
      // No route matched at all (ENETUNREACH, EHOSTUNREACH, ...): let the dump decide.
      // EINVAL would mean the request itself is wrong, which no dump can hide.
      if (err instanceof NetlinkError && err.code !== 'EINVAL') return undefined;
      throw err;
    }
    return matched && matched.table === RT_TABLE_MAIN ? [matched] : undefined;
  }

  private dumpPrefix(prefix: Cidr): Promise<DecodedRoute[]> {
    const af = afOf(prefix.family);
    return this.dump(
      `dump main-table routes for ${prefix.text}`,
      (seq, port) => encodeRouteDump(seq, port, af, RT_TABLE_MAIN),
      (msg) =>
        msg.type === RTM_NEWROUTE &&
        routeMatchesPrefix(msg.data, af, prefix.bytes, prefix.length) &&
        routeTable(msg.data) === RT_TABLE_MAIN
          ? decodeRoute(msg.data)
          : undefined,
    );
  }

  async replaceRoute(spec: RouteReplace): Promise<void> {
    const gateway = parseAddress(spec.gateway);
    if (gateway.family !== spec.prefix.family) {
      throw new NetlinkError(22, `route replace ${spec.prefix.text}`, `gateway ${spec.gateway} is not IPv${spec.prefix.family}`);
    }
    await this.requests.exchange(
      `route replace ${spec.prefix.text} via ${spec.gateway}`,
      (seq, port) =>
        encodeRouteReplace(seq, port, {
          family: afOf(spec.prefix.family),
          dst: spec.prefix.bytes,
          dstLen: spec.prefix.length,
          table: spec.table,
          priority: spec.priority,
          protocol: spec.protocol,
          scope: spec.scope,
          type: spec.type,
          gateway: gateway.bytes,
          oif: spec.oif,
          mtu: spec.mtu ?? undefined,
        }),
      () => undefined,
    );
  }

  subscribe(onEvent: (event: DataplaneEvent) => void): Subscription {
    const groups = [RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV6_ROUTE];
    return new SubscriptionChannel(
      groups,
      (msg) => {
        const event = toEvent(msg);
        if (event) onEvent(event);
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
  return { linkIndex: a.index, family, address: addressFromBytes(a.address).text, prefixLength: a.prefixLength };
}

function toKernelRoute(prefix: Cidr, r: DecodedRoute, names: Map<number, string>): KernelRoute {
  return {
    prefix: prefix.text,
    family: prefix.family,
    table: r.table,
    gateway: r.gateway ? addressFromBytes(r.gateway).text : null,
    oif: r.oif ?? null,
    dev: r.oif === undefined ? null : (names.get(r.oif) ?? null),
    mtu: r.mtu ?? null,
    priority: r.priority,
    protocol: r.protocol,
    scope: r.scope,
    type: r.type,
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
