// What the agent may read from and write to the kernel (kernel.ts), in the pure core's objects
// (src/core/route.ts): nothing above this line knows about netlink.
import type { InterfaceAddress, Link, Route, RouteReplace, Watched } from '../core/route.js';
import type { Cidr, Family } from '../net/cidr.js';

export type DataplaneEvent =
  | { kind: 'link'; op: 'new' | 'del'; link: Link }
  | { kind: 'address'; op: 'new' | 'del'; address: InterfaceAddress }
  | { kind: 'route'; op: 'new' | 'del'; family: Family; prefix: string; table: number }
  /** Notifications were dropped (ENOBUFS) or could not be read: anything may have changed. */
  | { kind: 'lost'; error: Error };

export type Subscription = { close(): void };

export interface Dataplane {
  /** The links of these names that exist. */
  links(names: readonly string[]): Promise<Link[]>;
  /** The addresses of these links, of these families (default: both). */
  addresses(links: readonly Link[], families?: readonly Family[]): Promise<InterfaceAddress[]>;
  /** Every main-table route for exactly one of `prefixes`, whatever its metric, by Cidr.text ([] for none). */
  routes(prefixes: Cidr[], links: Link[]): Promise<Map<string, Route[]>>;
  /** Swaps the next hop of the route with exactly this key, atomically; never creates one (ENOENT). */
  replaceRoute(replace: RouteReplace): Promise<void>;
  /** Main-table routes of its prefixes, its links, any address; `lost` when the kernel dropped some. */
  subscribe(watched: Watched, onEvent: (event: DataplaneEvent) => void): Subscription;
  close(): void;
}
