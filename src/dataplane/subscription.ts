// One subscription of the KernelDataplane: its socket and its event filter. It keeps no
// copy of the routes: an event only wakes the owner loop, whose pass reads the kernel
// afresh (kernel.ts), so no notification is ever applied, replayed or trusted for content.
//
// What it delivers, and why:
//  1. Route events of the watched prefixes in the main table (PrefixFilter, convert.ts);
//     other routes are dropped unread.
//  2. Link events of the watched link names, and of a watched link renamed away (by its
//     index, learnt from events and from link dumps).
//  3. Every address event.
//  4. `lost` when the kernel dropped notifications (ENOBUFS) or one did not decode: the
//     subscriber observes everything again; the socket stays open and polled.
//  5. A route `del` of a watched prefix when the kernel flushes its route without saying
//     so: IPv4 routes through a link that goes down, is deleted or loses an address, and
//     routes through a deleted nexthop object get no RTM_DELROUTE. The links and nexthop
//     objects each prefix used are learnt from the last routes() answer (learnRoutes).
import type { Link, Watched } from '../core/route.js';
import type { Family } from '../net/cidr.js';
import { SubscriptionChannel } from './channel.js';
import {
  decodeAddress,
  decodeLink,
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
import { PrefixFilter, toAddress } from './convert.js';
import { NetlinkDecodeError } from './errors.js';
import type { NetlinkTransport } from './transport.js';
import type { DataplaneEvent, Subscription } from './types.js';

export class WatchedSubscription implements Subscription {
  private readonly channel: SubscriptionChannel;
  private readonly families: Map<string, Family>;
  private readonly filter: PrefixFilter;
  private readonly linkNames: Set<string>;
  /** Index -> name of links that bore a watched name, so a rename away is still reported (point 2). */
  private readonly watchedIndexes = new Map<number, string>();
  /** Per watched prefix, what its routes went through at the last read (point 5). */
  private readonly uses = new Map<string, { oifs: number[]; nexthopObject: boolean }>();
  private closed = false;

  constructor(
    transport: NetlinkTransport,
    watched: Watched,
    private readonly onEvent: (event: DataplaneEvent) => void,
    private readonly onClose: () => void,
    rcvbuf: number | undefined,
  ) {
    this.families = new Map(watched.prefixes.map((p) => [p.text, p.family]));
    this.filter = new PrefixFilter(watched.prefixes);
    this.linkNames = new Set(watched.links);
    this.channel = new SubscriptionChannel(
      transport,
      {
        required: [RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV6_ROUTE],
        // Kernels without nexthop objects have neither the group nor routes that use one.
        optional: [RTNLGRP_NEXTHOP],
      },
      { onMessage: (msg) => this.onMessage(msg), onLost: (error) => this.emit({ kind: 'lost', error }) },
      rcvbuf,
    );
  }

  learnLinks(links: Link[]): void {
    for (const link of links) if (this.linkNames.has(link.name)) this.watchedIndexes.set(link.index, link.name);
  }

  learnRoutes(prefix: string, routes: DecodedRoute[]): void {
    if (!this.families.has(prefix)) return;
    const oifs = routes.flatMap((r) => [
      ...(r.oif === undefined ? [] : [r.oif]),
      ...(r.nexthops ?? []).map((h) => h.oif),
    ]);
    this.uses.set(prefix, { oifs, nexthopObject: routes.some((r) => r.nhid !== undefined) });
  }

  private onMessage(msg: NetlinkMessage): void {
    if (this.closed) return;
    try {
      this.handle(msg);
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      this.emit({
        kind: 'lost',
        error: new NetlinkDecodeError(`notification type ${msg.type}: ${detail}`, { cause: err }),
      });
    }
  }

  private handle(msg: NetlinkMessage): void {
    switch (msg.type) {
      case RTM_NEWROUTE:
      case RTM_DELROUTE: {
        const prefix = this.filter.match(msg.data);
        if (prefix !== undefined) this.emitRoute(msg.type === RTM_NEWROUTE ? 'new' : 'del', prefix);
        return;
      }
      case RTM_NEWLINK:
      case RTM_DELLINK: {
        const link = decodeLink(msg.data);
        const gone = msg.type === RTM_DELLINK;
        if (gone || !link.up) this.flushed((u) => u.oifs.includes(link.index));
        const watched = this.linkNames.has(link.name) || this.watchedIndexes.has(link.index);
        if (this.linkNames.has(link.name) && !gone) this.watchedIndexes.set(link.index, link.name);
        else this.watchedIndexes.delete(link.index);
        if (watched) this.emit({ kind: 'link', op: gone ? 'del' : 'new', link });
        return;
      }
      case RTM_NEWADDR:
      case RTM_DELADDR: {
        const decoded = decodeAddress(msg.data);
        if (msg.type === RTM_DELADDR) this.flushed((u) => u.oifs.includes(decoded.index));
        const address = toAddress(decoded);
        if (address) this.emit({ kind: 'address', op: msg.type === RTM_NEWADDR ? 'new' : 'del', address });
        return;
      }
      case RTM_NEWNEXTHOP:
      case RTM_DELNEXTHOP:
        this.flushed((u) => u.nexthopObject);
        return;
      default:
        return;
    }
  }

  /** Point 5: a `del` for each prefix whose routes the kernel may have flushed silently. */
  private flushed(used: (u: { oifs: number[]; nexthopObject: boolean }) => boolean): void {
    for (const [prefix, u] of this.uses) if (used(u)) this.emitRoute('del', prefix);
  }

  private emitRoute(op: 'new' | 'del', prefix: string): void {
    const family = this.families.get(prefix);
    if (family) this.emit({ kind: 'route', op, family, prefix, table: RT_TABLE_MAIN });
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
    this.channel.close();
    this.onClose();
  }
}
