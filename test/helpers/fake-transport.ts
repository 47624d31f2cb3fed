// A scripted fake kernel at the netlink transport (src/dataplane/kernel.ts, NetlinkTransport), after
// Felix's mocknetlink: it keeps links, addresses and routes, answers requests with
// real kernel-shaped messages built by the codec (the same bytes the dataplane
// decodes from the kernel), sends notifications to subscription sockets, and fails
// on demand. Each fault is a flag armed a number of times; every arming is consumed
// by exactly one call, and tests assert that what they armed was consumed.
import { strict as assert } from 'node:assert';
import {
  AF_INET,
  AF_INET6,
  decodeLink,
  decodeRoute,
  encodeRoute,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_DUMP_INTR,
  NLM_F_MULTI,
  NLM_F_REPLACE,
  parseDatagram,
  RTM_GETADDR,
  RTM_GETLINK,
  RTM_GETROUTE,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWROUTE,
  RTM_DELROUTE,
  RTNLGRP_IPV4_ROUTE,
  RTNLGRP_IPV6_ROUTE,
  RTNLGRP_LINK,
  type NetlinkMessage,
} from '../../src/dataplane/codec.js';
import { encodeAddress, encodeDone, encodeError, encodeLink } from './kernel-encode.js';
import type { NetlinkOpenOptions, NetlinkSocket, NetlinkTransport } from '../../src/dataplane/channel.js';
import { addressFromBytes, parseAddress, parseCidr, type Family } from '../../src/net/cidr.js';
import type { InterfaceAddress, Link } from '../../src/core/route.js';

export const FAULTS = [
  /** The next dumps (any kind) carry NLM_F_DUMP_INTR on every message. */
  'dump-interrupted',
  /** The next route dump ends at once in NLMSG_DONE with EINVAL and an ext-ack text. */
  'route-dump-einval',
  /** The next route replace is refused with ENETUNREACH and the kernel's ext-ack text. */
  'replace-enetunreach',
  /** The next request gets no answer at all. */
  'no-answer',
  /** The next answer is preceded by an answer carrying the previous sequence number. */
  'stale-reply',
  /** The next answer's first datagram is cut short. */
  'truncated-reply',
  /** The next notification datagram is cut short. */
  'truncated-notification',
  /** The next read of a subscription socket fails with ENOBUFS. */
  'enobufs',
  /** The next read of a request socket fails with ENOBUFS (its answer may be gone). */
  'request-enobufs',
  /**
   * The next socket opened with strictCheck gets none (the addon ignores ENOPROTOOPT from a
   * kernel before 4.20): its route dumps hold every table.
   */
  'no-strict-check',
] as const;
export type Fault = (typeof FAULTS)[number];

export const ENOBUFS = 105;
const EINVAL = 22;
const ENOENT = 2;
const ENETUNREACH = 101;
const ENODEV = 19;
const EOPNOTSUPP = 95;

export interface FakeRoute {
  /** Canonical CIDR text. */
  prefix: string;
  table: number;
  priority: number;
  tos: number;
  protocol: number;
  scope: number;
  type: number;
  gateway: string | null;
  oif: number | null;
  mtu: number | null;
}

function errnoError(errno: number, code: string, syscall: string): Error {
  return Object.assign(new Error(`${syscall} ${code}`), { errno, code, syscall });
}

function familyOf(prefix: string): Family {
  return prefix.includes(':') ? 6 : 4;
}

function encodeFakeRoute(type: number, flags: number, seq: number, port: number, r: FakeRoute): Buffer {
  const cidr = parseCidr(r.prefix);
  return encodeRoute(type, flags, seq, port, {
    family: cidr.family === 4 ? AF_INET : AF_INET6,
    dst: cidr.length === 0 ? undefined : cidr.bytes,
    dstLen: cidr.length,
    table: r.table,
    tos: r.tos,
    protocol: r.protocol,
    scope: r.scope,
    type: r.type,
    priority: r.priority,
    gateway: r.gateway === null ? undefined : parseAddress(r.gateway).bytes,
    oif: r.oif ?? undefined,
    mtu: r.mtu ?? undefined,
  });
}

class FakeSocket implements NetlinkSocket {
  readonly queue: Buffer[] = [];
  closed = false;
  strict = true;
  private scheduled = false;

  constructor(
    private readonly kernel: FakeKernel,
    readonly portId: number,
    readonly groups: Set<number>,
    private readonly onReadable: (status: number, rearm: number) => void,
  ) {}

  send(datagram: Buffer): void {
    if (this.closed) throw errnoError(9, 'EBADF', 'sendto');
    for (const msg of parseDatagram(datagram)) this.kernel.handle(this, msg);
  }

  recv(): Buffer | null {
    if (this.closed) throw errnoError(9, 'EBADF', 'recvmsg');
    if (this.kernel.take(this.groups.size > 0 ? 'enobufs' : 'request-enobufs'))
      throw errnoError(ENOBUFS, 'ENOBUFS', 'recvmsg');
    return this.queue.shift() ?? null;
  }

  setRef(): void {}

  close(): void {
    this.closed = true;
    this.kernel.sockets.delete(this);
  }

  /** Queues datagrams and, as libuv would, calls onReadable on a later turn of the loop. */
  deliver(datagrams: Buffer[]): void {
    if (this.closed) return;
    this.queue.push(...datagrams);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.closed && this.queue.length > 0) this.onReadable(0, 0);
    });
  }
}

export class FakeKernel implements NetlinkTransport {
  links: Link[] = [
    { index: 1, name: 'lo', up: true, mtu: 65536 },
    { index: 2, name: 'br-ex', up: true, mtu: 1500 },
    { index: 4, name: 'ovn-k8s-mp0', up: true, mtu: 1400 },
  ];
  addresses: InterfaceAddress[] = [
    { linkIndex: 2, family: 4, address: '172.18.0.2', prefixLength: 16, tentative: false, dadFailed: false },
    { linkIndex: 4, family: 4, address: '10.244.1.2', prefixLength: 24, tentative: false, dadFailed: false },
    { linkIndex: 2, family: 6, address: 'fd00:172:18::2', prefixLength: 64, tentative: false, dadFailed: false },
    { linkIndex: 4, family: 6, address: 'fd00:10:244:1::2', prefixLength: 64, tentative: false, dadFailed: false },
  ];
  /** The seed's node, dual-stack: stale shared-mode service routes and default routes. */
  routes: FakeRoute[] = [
    route('0.0.0.0/0', '172.18.0.1', 2, null),
    route('10.96.0.0/16', '172.18.0.1', 2, 1400),
    route('10.244.1.0/24', null, 4, null, { protocol: 2, scope: 253 }),
    route('::/0', 'fd00:172:18::1', 2, null, { priority: 1024 }),
    route('fd00:10:96::/112', 'fd00:172:18::1', 2, 1400, { priority: 1024 }),
  ];
  readonly sockets = new Set<FakeSocket>();
  /** Requests received, by kind: 'route-dump', 'link-get', 'address-dump', 'replace'. */
  readonly requests = new Map<string, number>();
  private readonly armed = new Map<Fault, number>();
  private readonly consumedCount = new Map<Fault, number>();
  private nextPort = 100;
  private dropWaiters: Array<() => void> = [];

  open(options: NetlinkOpenOptions, onReadable: (status: number, rearm: number) => void): NetlinkSocket {
    const socket = new FakeSocket(
      this,
      this.nextPort++,
      new Set([...(options.groups ?? []), ...(options.optionalGroups ?? [])]),
      onReadable,
    );
    if (options.strictCheck && this.take('no-strict-check')) socket.strict = false;
    this.sockets.add(socket);
    return socket;
  }

  /** Arms a fault for the next `times` calls it applies to. */
  inject(fault: Fault, times = 1): void {
    this.armed.set(fault, (this.armed.get(fault) ?? 0) + times);
  }

  consumed(fault: Fault): number {
    return this.consumedCount.get(fault) ?? 0;
  }

  /** Asserts that every armed fault was consumed. */
  assertAllConsumed(): void {
    assert.deepEqual(
      [...this.armed].filter(([, n]) => n > 0),
      [],
      'every injected fault was consumed',
    );
  }

  take(fault: Fault): boolean {
    const n = this.armed.get(fault) ?? 0;
    if (n === 0) return false;
    this.armed.set(fault, n - 1);
    this.consumedCount.set(fault, this.consumed(fault) + 1);
    return true;
  }

  count(kind: string): number {
    return this.requests.get(kind) ?? 0;
  }

  /** Resolves when the kernel next leaves a request unanswered ('no-answer'). */
  unanswered(): Promise<void> {
    return new Promise((resolve) => this.dropWaiters.push(resolve));
  }

  /** A change made by someone else (`ip route replace`, `add`, `del`): applied, then notified. */
  setRoute(r: FakeRoute): void {
    const i = this.routes.findIndex((x) => sameKey(x, r));
    const flags = i >= 0 ? NLM_F_REPLACE : NLM_F_CREATE;
    if (i >= 0) this.routes[i] = r;
    else this.routes.push(r);
    this.notifyRoute(RTM_NEWROUTE, flags, r);
  }

  /** A link change made by someone else: applied, then notified. */
  setLink(link: Link): void {
    this.links = [...this.links.filter((l) => l.index !== link.index), link];
    this.notify(RTNLGRP_LINK, encodeLink(RTM_NEWLINK, 0, 0, 0, link));
  }

  deleteRoute(prefix: string, table = 254): void {
    const i = this.routes.findIndex((x) => x.prefix === prefix && x.table === table);
    const [gone] = i >= 0 ? this.routes.splice(i, 1) : [];
    if (gone) this.notifyRoute(RTM_DELROUTE, 0, gone);
  }

  /** The fake's own view of a prefix's main-table routes, for comparison with routes(). */
  mainRoutes(prefix: string): FakeRoute[] {
    return this.routes.filter((r) => r.prefix === prefix && r.table === 254);
  }

  private notifyRoute(type: number, flags: number, r: FakeRoute): void {
    const group = familyOf(r.prefix) === 4 ? RTNLGRP_IPV4_ROUTE : RTNLGRP_IPV6_ROUTE;
    this.notify(group, encodeFakeRoute(type, flags, 0, 0, r));
  }

  private notify(group: number, datagram: Buffer): void {
    for (const s of this.sockets) {
      if (!s.groups.has(group)) continue;
      s.deliver([this.take('truncated-notification') ? datagram.subarray(0, datagram.length - 6) : datagram]);
    }
  }

  handle(socket: FakeSocket, msg: NetlinkMessage): void {
    const kind = requestKind(msg);
    this.requests.set(kind, this.count(kind) + 1);
    if (this.take('no-answer')) {
      for (const w of this.dropWaiters.splice(0)) w();
      return;
    }
    let answer = this.answer(socket, msg, kind);
    if (this.take('truncated-reply')) answer = [answer[0]!.subarray(0, answer[0]!.length - 6), ...answer.slice(1)];
    if (this.take('stale-reply'))
      answer = [encodeError(socket.portId, { ...msg, seq: msg.seq - 1 }, ENOENT), ...answer];
    socket.deliver(answer);
  }

  private answer(socket: FakeSocket, msg: NetlinkMessage, kind: string): Buffer[] {
    const port = socket.portId;
    switch (kind) {
      case 'link-get': {
        // The kernel's rtnl_getlink: by index when one is given, else by name; ENODEV for none.
        const asked = decodeLink(msg.data);
        const link = this.links.find((l) => (asked.index > 0 ? l.index === asked.index : l.name === asked.name));
        return [link ? encodeLink(RTM_NEWLINK, 0, msg.seq, port, link) : encodeError(port, msg, ENODEV)];
      }
      case 'address-dump':
        return this.dump(
          msg,
          port,
          this.addresses.map(
            (a) => (flags: number) =>
              encodeAddress(RTM_NEWADDR, flags, msg.seq, port, {
                family: a.family === 4 ? AF_INET : AF_INET6,
                index: a.linkIndex,
                prefixLength: a.prefixLength,
                address: parseAddress(a.address).bytes,
                tentative: a.tentative,
                dadFailed: a.dadFailed,
              }),
          ),
        );
      case 'route-dump': {
        if (this.take('route-dump-einval')) {
          return [encodeDone(msg.seq, port, EINVAL, 'Invalid values in header for FIB dump request')];
        }
        const request = decodeRoute(msg.data);
        // AF_UNSPEC (0) asks for every family.
        const family: Family | undefined = request.family === AF_INET ? 4 : request.family === AF_INET6 ? 6 : undefined;
        const rows = this.routes
          .filter((r) => family === undefined || familyOf(r.prefix) === family)
          .filter((r) => !socket.strict || r.table === request.table)
          .map((r) => ({ ...r }));
        return this.dump(
          msg,
          port,
          rows.map((r) => (flags: number) => encodeFakeRoute(RTM_NEWROUTE, flags, msg.seq, port, r)),
        );
      }
      case 'replace':
        return [this.replace(msg, port)];
      default:
        return [encodeError(port, msg, EOPNOTSUPP)];
    }
  }

  /** Rows, two to a datagram (so datagrams carry several messages), then DONE. */
  private dump(request: NetlinkMessage, port: number, rows: Array<(flags: number) => Buffer>): Buffer[] {
    const flags = NLM_F_MULTI | (this.take('dump-interrupted') ? NLM_F_DUMP_INTR : 0);
    const messages = [
      ...rows.map((row) => row(flags)),
      encodeDone(request.seq, port, 0, undefined, flags & NLM_F_DUMP_INTR),
    ];
    const datagrams: Buffer[] = [];
    for (let i = 0; i < messages.length; i += 2) datagrams.push(Buffer.concat(messages.slice(i, i + 2)));
    return datagrams;
  }

  /** The kernel's replace: REPLACE matches destination, table, TOS and metric; without CREATE, no match is ENOENT. */
  private replace(msg: NetlinkMessage, port: number): Buffer {
    const r = decodeRoute(msg.data);
    const family: Family = r.family === AF_INET ? 4 : 6;
    const prefix = `${addressFromBytes(r.dst ?? Buffer.alloc(family === 4 ? 4 : 16)).text}/${r.dstLen}`;
    const wanted: FakeRoute = {
      prefix,
      table: r.table,
      priority: r.priority,
      tos: r.tos,
      protocol: r.protocol,
      scope: r.scope,
      type: r.type,
      gateway: r.gateway ? addressFromBytes(r.gateway).text : null,
      oif: r.oif ?? null,
      mtu: r.mtu ?? null,
    };
    if (this.take('replace-enetunreach')) return encodeError(port, msg, ENETUNREACH, 'Nexthop has invalid gateway');
    const i = this.routes.findIndex((x) => sameKey(x, wanted));
    if (i < 0 && !(msg.flags & NLM_F_CREATE)) return encodeError(port, msg, ENOENT);
    this.setRoute(wanted);
    return encodeError(port, msg, 0);
  }
}

function sameKey(a: FakeRoute, b: FakeRoute): boolean {
  return a.prefix === b.prefix && a.table === b.table && a.priority === b.priority && a.tos === b.tos;
}

function requestKind(msg: NetlinkMessage): string {
  const dump = (msg.flags & NLM_F_DUMP) === NLM_F_DUMP;
  if (msg.type === RTM_GETROUTE && dump) return 'route-dump';
  if (msg.type === RTM_GETLINK && !dump) return 'link-get';
  if (msg.type === RTM_GETADDR && dump) return 'address-dump';
  if (msg.type === RTM_NEWROUTE) return 'replace';
  return `type ${msg.type}`;
}

/** A main-table route of protocol boot, scope universe, unicast, unless `extra` says otherwise. */
export function route(
  prefix: string,
  gateway: string | null,
  oif: number,
  mtu: number | null,
  extra: Partial<FakeRoute> = {},
): FakeRoute {
  return { prefix, table: 254, priority: 0, tos: 0, protocol: 3, scope: 0, type: 1, gateway, oif, mtu, ...extra };
}
