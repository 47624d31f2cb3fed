// A stateful fake of the kernel's routing side, for the owner loop's fault tests only
// (the dataplane's own faults are injected at the transport, see fake-transport.ts;
// the real kernel is used everywhere else). It keeps links, addresses and routes,
// replaces like the kernel (by key, never creating), emits events, and fails on
// demand: each fault fires once and is marked consumed, so a test can assert that the
// fault it injected really happened.
import type { InterfaceAddress, Link, Route, RouteReplace, Watched } from '../../src/core/route.js';
import type { Dataplane, DataplaneEvent, Subscription } from '../../src/dataplane/types.js';
import { NetlinkError, NetlinkTimeoutError } from '../../src/dataplane/errors.js';
import type { Cidr, Family } from '../../src/net/cidr.js';

export type Fault =
  | 'replace-eperm'
  | 'replace-silently-ignored'
  | 'dump-interrupted'
  /** The route vanishes between observation and replace. */
  | 'route-vanishes'
  /** The replace of the IPv6 CIDR fails (after the IPv4 one succeeded). */
  | 'replace-v6-eperm'
  /** The replace of the IPv6 CIDR is refused with EHOSTUNREACH: mp0 lost the on-link route of its v6 subnet. */
  | 'replace-v6-unreachable'
  /** The kernel applies the replace, and its answer is lost. */
  | 'replace-answer-lost'
  /** The kernel applies the replace, and its notification is lost (nothing says so). */
  | 'replace-unannounced';

export class FakeDataplane implements Dataplane {
  linkList: Link[] = [
    { index: 2, name: 'br-ex', up: true, mtu: 1500 },
    { index: 4, name: 'ovn-k8s-mp0', up: true, mtu: 1400 },
    { index: 5, name: 'ovn-k8s-gw0', up: true, mtu: 1400 },
  ];
  addressList: InterfaceAddress[] = [
    { linkIndex: 2, family: 4, address: '172.18.0.2', prefixLength: 16, tentative: false, dadFailed: false },
    { linkIndex: 4, family: 4, address: '10.244.1.2', prefixLength: 24, tentative: false, dadFailed: false },
    { linkIndex: 4, family: 6, address: 'fd00:10:244:1::2', prefixLength: 64, tentative: false, dadFailed: false },
  ];
  readonly table = new Map<string, Route[]>();
  readonly replaces: RouteReplace[] = [];
  private readonly faults = new Set<Fault>();
  /** Faults that fire every time, until cleared (a node left broken). */
  private readonly standing = new Set<Fault>();
  readonly consumed = new Set<Fault>();
  private readonly subscribers = new Set<(e: DataplaneEvent) => void>();
  /** Someone else's doing right after a replace the kernel took (announced or not), once: a test's hook. */
  afterReplace: ((r: RouteReplace) => void) | null = null;

  constructor() {
    this.setRoute('10.96.0.0/16', '172.18.0.1', 'br-ex', 1400);
    this.setRoute('0.0.0.0/0', '172.18.0.1', 'br-ex', null);
    this.setRoute('::/0', 'fd00:18::1', 'br-ex', null);
  }

  /** Sets a route as someone else would, without telling subscribers. */
  setRoute(prefix: string, gateway: string, dev: string, mtu: number | null): void {
    const oif = this.linkList.find((l) => l.name === dev)?.index ?? null;
    this.table.set(prefix, [
      {
        key: { prefix, family: prefix.includes(':') ? 6 : 4, table: 254, priority: 0 },
        nextHop: { dev, oif, gateway, mtu },
        protocol: 3,
        scope: 0,
        type: 1,
        tos: 0,
        multipath: false,
        unmodelled: [],
      },
    ]);
  }

  nextHopOf(prefix: string): string {
    const r = this.table.get(prefix) ?? [];
    return r
      .map(
        (x) => `via ${x.nextHop.gateway} dev ${x.nextHop.dev}${x.nextHop.mtu === null ? '' : ` mtu ${x.nextHop.mtu}`}`,
      )
      .join(' | ');
  }

  inject(fault: Fault): void {
    this.faults.add(fault);
  }

  /** A fault that fires at every chance until clear() (it is marked consumed when it first fires). */
  injectStanding(fault: Fault): void {
    this.standing.add(fault);
  }

  clear(fault: Fault): void {
    this.standing.delete(fault);
  }

  private take(fault: Fault): boolean {
    if (!this.faults.delete(fault) && !this.standing.has(fault)) return false;
    this.consumed.add(fault);
    return true;
  }

  emit(event: DataplaneEvent): void {
    for (const s of this.subscribers) s(event);
  }

  async links(names: readonly string[]): Promise<Link[]> {
    return this.linkList.filter((l) => names.includes(l.name));
  }

  async addresses(links: readonly Link[], families: readonly Family[] = [4, 6]): Promise<InterfaceAddress[]> {
    if (this.take('dump-interrupted')) throw new NetlinkError(4, 'dump addresses (interrupted 5 times in a row)');
    return this.addressList.filter((a) => links.some((l) => l.index === a.linkIndex) && families.includes(a.family));
  }

  async routes(prefixes: Cidr[]): Promise<Map<string, Route[]>> {
    const out = new Map(prefixes.map((p) => [p.text, structuredClone(this.table.get(p.text) ?? [])]));
    if (this.take('route-vanishes')) this.table.delete('10.96.0.0/16');
    return out;
  }

  async replaceRoute(r: RouteReplace): Promise<void> {
    this.replaces.push(r);
    if (this.take('replace-eperm')) throw new NetlinkError(1, `route replace ${r.key.prefix}`);
    if (r.key.family === 6 && this.take('replace-v6-eperm')) throw new NetlinkError(1, `route replace ${r.key.prefix}`);
    if (r.key.family === 6 && this.take('replace-v6-unreachable'))
      throw new NetlinkError(113, `route replace ${r.key.prefix}`);
    if (this.take('replace-silently-ignored')) return;
    const existing = (this.table.get(r.key.prefix) ?? []).find(
      (x) => x.key.table === r.key.table && x.key.priority === r.key.priority,
    );
    // Like the kernel without NLM_F_CREATE: no route with this key, no route made.
    if (!existing) throw new NetlinkError(2, `route replace ${r.key.prefix}`);
    existing.nextHop = { ...r.to, dev: this.linkList.find((l) => l.index === r.to.oif)?.name ?? null };
    if (this.take('replace-answer-lost'))
      throw new NetlinkTimeoutError(`route replace ${r.key.prefix}: no answer from the kernel in 10000 ms`);
    if (!this.take('replace-unannounced'))
      this.emit({ kind: 'route', op: 'new', family: r.key.family, prefix: r.key.prefix, table: r.key.table });
    const after = this.afterReplace;
    this.afterReplace = null;
    after?.(r);
  }

  subscribe(_watched: Watched, onEvent: (event: DataplaneEvent) => void): Subscription {
    this.subscribers.add(onEvent);
    return { close: () => this.subscribers.delete(onEvent) };
  }

  close(): void {}
}
