// The dataplane's narrow interface: what the agent may read from and write to the
// kernel. The kernel implementation is kernel.ts; the objects are the pure core's
// (src/core/route.ts), so nothing above this line knows about netlink.
import type { InterfaceAddress, Link, Route, RouteReplace, Watched } from '../core/route.js';
import type { Cidr, Family } from '../net/cidr.js';

export type DataplaneEvent =
  | { kind: 'link'; op: 'new' | 'del'; link: Link }
  | { kind: 'address'; op: 'new' | 'del'; address: InterfaceAddress }
  | { kind: 'route'; op: 'new' | 'del'; family: Family; prefix: string; table: number }
  /** Notifications were dropped (ENOBUFS) or could not be read: anything may have changed. */
  | { kind: 'lost'; error: Error };

export interface Subscription {
  close(): void;
}

export interface Dataplane {
  links(): Promise<Link[]>;
  addresses(): Promise<InterfaceAddress[]>;
  /**
   * Every main-table route whose destination is exactly one of `prefixes`, whatever
   * its metric, keyed by Cidr.text (a prefix with no route maps to []). Output
   * interface names are resolved from `links`.
   */
  routes(prefixes: Cidr[], links: Link[]): Promise<Map<string, Route[]>>;
  /**
   * Swaps the next hop of the route with exactly this key, atomically. Never
   * creates a route: a key that matches none fails with a NetlinkError ENOENT.
   */
  replaceRoute(replace: RouteReplace): Promise<void>;
  /**
   * Notifications that concern `watched`: main-table routes of its prefixes, its
   * links, any address; `lost` when the kernel dropped notifications.
   */
  subscribe(watched: Watched, onEvent: (event: DataplaneEvent) => void): Subscription;
  close(): void;
}
