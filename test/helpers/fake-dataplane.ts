// A stateful fake of the kernel's routing side, for fault injection only (the real
// kernel is used everywhere else). It keeps links, addresses and routes, applies
// replaces, emits events, and fails on demand: each fault fires once and is marked
// consumed, so a test can assert that the fault it injected really happened.
import type { Dataplane, DataplaneEvent, InterfaceAddress, KernelRoute, Link, RouteReplace, Subscription } from '../../src/dataplane/types.js';
import { NetlinkError } from '../../src/dataplane/errors.js';
import type { Cidr } from '../../src/net/cidr.js';

export type Fault = 'replace-eperm' | 'replace-silently-ignored' | 'dump-interrupted';

export class FakeDataplane implements Dataplane {
  linkList: Link[] = [
    { index: 2, name: 'br-ex', up: true },
    { index: 4, name: 'ovn-k8s-mp0', up: true },
    { index: 5, name: 'ovn-k8s-gw0', up: true },
  ];
  addressList: InterfaceAddress[] = [
    { linkIndex: 2, family: 4, address: '172.18.0.2', prefixLength: 16 },
    { linkIndex: 4, family: 4, address: '10.244.1.2', prefixLength: 24 },
  ];
  readonly routes = new Map<string, KernelRoute[]>();
  readonly replaces: RouteReplace[] = [];
  private readonly faults = new Set<Fault>();
  readonly consumed = new Set<Fault>();
  private readonly subscribers = new Set<(e: DataplaneEvent) => void>();

  constructor() {
    this.setRoute('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400);
    this.setRoute('0.0.0.0/0', '172.18.0.1', 'br-ex', null);
  }

  /** Sets a route as someone else would, without telling subscribers. */
  setRoute(prefix: string, gateway: string, dev: string, mtu: number | null): void {
    const oif = this.linkList.find((l) => l.name === dev)?.index ?? null;
    this.routes.set(prefix, [
      { prefix, family: 4, table: 254, gateway, oif, dev, mtu, priority: 0, protocol: 3, scope: 0, type: 1, multipath: false },
    ]);
  }

  inject(fault: Fault): void {
    this.faults.add(fault);
  }

  private take(fault: Fault): boolean {
    if (!this.faults.delete(fault)) return false;
    this.consumed.add(fault);
    return true;
  }

  emit(event: DataplaneEvent): void {
    for (const s of this.subscribers) s(event);
  }

  async links(): Promise<Link[]> {
    if (this.take('dump-interrupted')) throw new NetlinkError(4, 'dump links (interrupted 5 times in a row)');
    return this.linkList;
  }

  async addresses(): Promise<InterfaceAddress[]> {
    return this.addressList;
  }

  async routesFor(prefix: Cidr): Promise<KernelRoute[]> {
    return this.routes.get(prefix.text) ?? [];
  }

  async replaceRoute(spec: RouteReplace): Promise<void> {
    this.replaces.push(spec);
    if (this.take('replace-eperm')) throw new NetlinkError(1, `route replace ${spec.prefix.text}`);
    if (this.take('replace-silently-ignored')) return;
    const dev = this.linkList.find((l) => l.index === spec.oif)?.name ?? null;
    this.setRoute(spec.prefix.text, spec.gateway, dev ?? '', spec.mtu);
    this.emit({ kind: 'route', op: 'new', family: 4, prefix: spec.prefix.text, table: spec.table });
  }

  subscribe(onEvent: (event: DataplaneEvent) => void): Subscription {
    this.subscribers.add(onEvent);
    return { close: () => this.subscribers.delete(onEvent) };
  }

  close(): void {}
}
