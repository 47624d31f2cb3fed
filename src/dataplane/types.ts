// The dataplane's narrow interface: what the agent may read from and write to the
// kernel. The kernel implementation is kernel.ts; tests of the pure core use fakes.
import type { Cidr, Family } from '../net/cidr.js';

export interface Link {
  index: number;
  name: string;
  up: boolean;
}

export interface InterfaceAddress {
  linkIndex: number;
  family: Family;
  address: string;
  prefixLength: number;
}

/** A main-table route whose destination is exactly a watched prefix. */
export interface KernelRoute {
  prefix: string;
  family: Family;
  table: number;
  gateway: string | null;
  oif: number | null;
  /** The output interface's name; null when the route has none or the link is gone. */
  dev: string | null;
  mtu: number | null;
  priority: number;
  protocol: number;
  scope: number;
  type: number;
  multipath: boolean;
}

/** An atomic replace of one route: the kernel swaps it in place (REPLACE|CREATE). */
export interface RouteReplace {
  prefix: Cidr;
  table: number;
  priority: number;
  protocol: number;
  scope: number;
  type: number;
  gateway: string;
  oif: number;
  mtu: number | null;
}

export type DataplaneEvent =
  | { kind: 'link'; op: 'new' | 'del'; link: Link }
  | { kind: 'address'; op: 'new' | 'del'; address: InterfaceAddress }
  | { kind: 'route'; op: 'new' | 'del'; family: Family; prefix: string; table: number }
  | { kind: 'lost'; error: Error };

export interface Subscription {
  close(): void;
}

export interface Dataplane {
  links(): Promise<Link[]>;
  addresses(): Promise<InterfaceAddress[]>;
  /**
   * Main-table routes whose destination equals prefix exactly. Output interface names
   * come from `links` when the caller has just listed them, else from a fresh dump.
   */
  routesFor(prefix: Cidr, links?: Link[]): Promise<KernelRoute[]>;
  replaceRoute(spec: RouteReplace): Promise<void>;
  subscribe(onEvent: (event: DataplaneEvent) => void): Subscription;
  close(): void;
}
