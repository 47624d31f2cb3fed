// The only module that imports the npm `netlink` package, and only for its
// message codec: its socket is not used (see native/src/netlink_socket.c).
// Besides decoding what the kernel sends and encoding what the agent asks, it
// encodes kernel-shaped replies and notifications: the fake kernel of the tests
// (test/helpers/fake-transport.ts) answers with the very bytes this module decodes.
// Two files of the package, not its index: the index also loads its socket, its native
// binding and the nl80211, WireGuard and genl codecs (240 KB of generated code), about
// 45 ms and 13 MB of a start that needs none of them.
import { endianness } from 'node:os';
import type { NetlinkMessage } from 'netlink';
import { requireModule } from '../require.js';

// Route messages are decoded in route-decode.ts, without the package (see there why).
export { decodeRoute, type DecodedNextHop, type DecodedRoute, type RouteMessage } from './route-decode.js';
import type { RouteMessage } from './route-decode.js';

const structs = requireModule('netlink/dist/structs.js') as typeof import('netlink/dist/structs.js');
const rt = requireModule('netlink/dist/rt/structs.js') as typeof import('netlink/dist/rt/structs.js');

export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;

export const NLM_F_REQUEST = 0x1;
export const NLM_F_MULTI = 0x2;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP_INTR = 0x10;
export const NLM_F_DUMP = 0x300;
export const NLM_F_REPLACE = 0x100;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
export const NLM_F_APPEND = 0x800;
/** In an NLMSG_ERROR header: the original request's payload was left out. */
const NLM_F_CAPPED = 0x100;
/** In an NLMSG_ERROR or NLMSG_DONE header: extended-ack attributes follow. */
const NLM_F_ACK_TLVS = 0x200;
const NLMSGERR_ATTR_MSG = 1;
const NLMSG_HDRLEN = 16;

export const RTM_NEWLINK = 16;
export const RTM_DELLINK = 17;
export const RTM_GETLINK = 18;
export const RTM_NEWADDR = 20;
export const RTM_DELADDR = 21;
export const RTM_GETADDR = 22;
export const RTM_NEWROUTE = 24;
export const RTM_DELROUTE = 25;
export const RTM_GETROUTE = 26;
export const RTM_NEWNEXTHOP = 104;
export const RTM_DELNEXTHOP = 105;

export const AF_INET = 2;
export const AF_INET6 = 10;
export const RT_TABLE_MAIN = 254;

export const RTNLGRP_LINK = 1;
export const RTNLGRP_IPV4_IFADDR = 5;
export const RTNLGRP_IPV4_ROUTE = 7;
export const RTNLGRP_IPV6_IFADDR = 9;
export const RTNLGRP_IPV6_ROUTE = 11;
export const RTNLGRP_NEXTHOP = 32;

const RTA_DST = 1;
const RTA_TABLE = 15;
const RTMSG_LENGTH = 12;
const IFA_F_DADFAILED = 0x08;
const IFA_F_TENTATIVE = 0x40;

export type { NetlinkMessage };

export interface DecodedLink {
  index: number;
  name: string;
  up: boolean;
  mtu: number | null;
}

export interface DecodedAddress {
  family: number;
  index: number;
  prefixLength: number;
  address: Buffer | undefined;
  tentative: boolean;
  dadFailed: boolean;
}

export interface DecodedError {
  /** Positive errno; 0 for an acknowledgement or a clean end of dump. */
  errno: number;
  /** The kernel's extended-ack text, when it gave one. */
  extAck: string | undefined;
}

/** Splits one datagram into its netlink messages; throws when a length is wrong. */
export function parseDatagram(datagram: Buffer): NetlinkMessage[] {
  return structs.parseMessages(datagram);
}

function encode(type: number, flags: number, seq: number, port: number, payload: Uint8Array[]): Buffer {
  return Buffer.concat(structs.formatMessage({ type, flags, seq, port, data: payload }));
}

function streamOf(fill: (out: InstanceType<typeof structs.AttrStream>) => void): Uint8Array[] {
  const out = new structs.AttrStream();
  fill(out);
  return out.bufs;
}

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(value >>> 0, 0);
  return b;
}

export function encodeLinkDump(seq: number, port: number): Buffer {
  const payload = streamOf((out) => rt.formatLinkMessage({ kind: 'link', data: {}, attrs: {} }, out));
  return encode(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, seq, port, payload);
}

export function encodeAddressDump(seq: number, port: number): Buffer {
  const payload = streamOf((out) => rt.formatAddressMessage({ kind: 'address', data: {}, attrs: {} }, out));
  return encode(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, seq, port, payload);
}

/**
 * A route dump of one table and family. With NETLINK_GET_STRICT_CHK on the socket
 * the kernel applies the table filter itself and sends only that table's routes;
 * the kernel never filters a dump by destination, so callers pick their prefixes
 * out of the raw bytes (PrefixFilter) and decode only those.
 */
export function encodeRouteDump(seq: number, port: number, family: number, table: number): Buffer {
  const payload = streamOf((out) =>
    rt.formatRouteMessage({ kind: 'route', data: { family, table: table < 256 ? table : 0 }, attrs: { table } }, out),
  );
  return encode(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq, port, payload);
}

export function encodeRoute(type: number, flags: number, seq: number, port: number, r: RouteMessage): Buffer {
  const payload = streamOf((out) =>
    rt.formatRouteMessage(
      {
        kind: 'route',
        data: {
          family: r.family,
          dstLen: r.dstLen,
          tos: r.tos,
          table: r.table < 256 ? r.table : 0,
          protocol: r.protocol,
          scope: r.scope,
          type: r.type,
        },
        attrs: {
          ...(r.dst ? { dst: r.dst } : {}),
          table: r.table,
          priority: r.priority,
          ...(r.gateway ? { gateway: r.gateway } : {}),
          ...(r.oif === undefined ? {} : { oif: r.oif }),
          ...(r.mtu === undefined ? {} : { metrics: { mtu: u32(r.mtu) } }),
        },
      },
      out,
    ),
  );
  return encode(type, flags, seq, port, payload);
}

/**
 * RTM_NEWROUTE with NLM_F_REPLACE and an ACK, and without NLM_F_CREATE: the kernel
 * swaps the route whose destination, table, TOS and metric match, atomically, and
 * answers ENOENT when none does. With NLM_F_CREATE it would create a route instead
 * (or add a second one beside a route whose metric changed), in both families.
 */
export function encodeRouteReplace(seq: number, port: number, r: RouteMessage): Buffer {
  return encodeRoute(RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_REPLACE, seq, port, r);
}

export function encodeLink(type: number, flags: number, seq: number, port: number, link: DecodedLink): Buffer {
  const payload = streamOf((out) =>
    rt.formatLinkMessage(
      {
        kind: 'link',
        data: { index: link.index, flags: link.up ? { up: true } : {} },
        attrs: { ifname: link.name, ...(link.mtu === null ? {} : { mtu: link.mtu }) },
      },
      out,
    ),
  );
  return encode(type, flags, seq, port, payload);
}

export function encodeAddress(type: number, flags: number, seq: number, port: number, a: DecodedAddress): Buffer {
  const addressFlags = {
    ...(a.tentative ? { tentative: true as const } : {}),
    ...(a.dadFailed ? { dadfailed: true as const } : {}),
  };
  const payload = streamOf((out) =>
    rt.formatAddressMessage(
      {
        kind: 'address',
        data: { family: a.family, prefixlen: a.prefixLength, index: a.index, flags: addressFlags },
        attrs: a.address ? { address: a.address, local: a.address, flags: addressFlags } : { flags: addressFlags },
      },
      out,
    ),
  );
  return encode(type, flags, seq, port, payload);
}

function extAckAttribute(extAck: string | undefined): Buffer[] {
  if (extAck === undefined) return [];
  const text = Buffer.from(`${extAck}\0`);
  const header = Buffer.alloc(4);
  header.writeUInt16LE(4 + text.length, 0);
  header.writeUInt16LE(NLMSGERR_ATTR_MSG, 2);
  return [header, text, Buffer.alloc((4 - (text.length % 4)) % 4)];
}

function errnoField(errno: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(-errno, 0);
  return b;
}

/** The end of a dump as the kernel writes it: an int error, then (NLM_F_ACK_TLVS) ext-ack attributes. */
export function encodeDone(seq: number, port: number, errno = 0, extAck?: string, flags = 0): Buffer {
  const tlvs = extAckAttribute(extAck);
  return encode(NLMSG_DONE, NLM_F_MULTI | flags | (tlvs.length ? NLM_F_ACK_TLVS : 0), seq, port, [
    errnoField(errno),
    ...tlvs,
  ]);
}

/**
 * An acknowledgement (errno 0: the request's header only, NLM_F_CAPPED) or an error
 * (the whole request echoed, then ext-ack attributes), as the kernel writes them.
 */
export function encodeError(port: number, request: NetlinkMessage, errno: number, extAck?: string): Buffer {
  const header = Buffer.alloc(NLMSG_HDRLEN);
  header.writeUInt32LE(NLMSG_HDRLEN + request.data.length, 0);
  header.writeUInt16LE(request.type, 4);
  header.writeUInt16LE(request.flags, 6);
  header.writeUInt32LE(request.seq, 8);
  header.writeUInt32LE(request.port, 12);
  const echoed = errno === 0 ? [header] : [header, request.data];
  const tlvs = extAckAttribute(extAck);
  const flags = (errno === 0 ? NLM_F_CAPPED : 0) | (tlvs.length ? NLM_F_ACK_TLVS : 0);
  return encode(NLMSG_ERROR, flags, request.seq, port, [errnoField(errno), ...echoed, ...tlvs]);
}

function extAckText(tlvs: Buffer): string | undefined {
  let text: string | undefined;
  structs.parseAttributes(tlvs, (attr) => {
    if (attr.type === NLMSGERR_ATTR_MSG) text = structs.getString(attr.data);
  });
  return text;
}

/** NLMSG_ERROR: struct nlmsgerr (error, the request's header, its payload unless capped), then ext-ack. */
export function decodeError(msg: NetlinkMessage): DecodedError {
  const errno = 0 - msg.data.readInt32LE(0);
  if (!(msg.flags & NLM_F_ACK_TLVS)) return { errno, extAck: undefined };
  const requestLength = msg.data.readUInt32LE(4);
  const offset = 4 + (msg.flags & NLM_F_CAPPED ? NLMSG_HDRLEN : requestLength);
  return { errno, extAck: offset < msg.data.length ? extAckText(msg.data.subarray(offset)) : undefined };
}

/**
 * NLMSG_DONE: an int error and, with NLM_F_ACK_TLVS, ext-ack attributes right after
 * it (no echoed request, unlike NLMSG_ERROR). A dump the kernel rejects, e.g. under
 * strict checking, ends this way.
 */
export function decodeDone(msg: NetlinkMessage): DecodedError {
  if (msg.data.length < 4) return { errno: 0, extAck: undefined };
  const errno = 0 - msg.data.readInt32LE(0);
  const extAck = msg.flags & NLM_F_ACK_TLVS && msg.data.length > 4 ? extAckText(msg.data.subarray(4)) : undefined;
  return { errno, extAck };
}

/** The table a route message belongs to (RTA_TABLE wins over the 8-bit header field). */
export function routeTable(payload: Buffer): number {
  let offset = RTMSG_LENGTH;
  while (offset + 4 <= payload.length) {
    const attrLen = payload.readUInt16LE(offset);
    if (attrLen < 4) break;
    if ((payload.readUInt16LE(offset + 2) & 0x3fff) === RTA_TABLE && attrLen >= 8)
      return payload.readUInt32LE(offset + 4);
    offset += (attrLen + 3) & ~3;
  }
  return payload[4] ?? 0;
}

function routeDestinationHex(payload: Buffer): string {
  let offset = RTMSG_LENGTH;
  while (offset + 4 <= payload.length) {
    const attrLen = payload.readUInt16LE(offset);
    if (attrLen < 4) break;
    if ((payload.readUInt16LE(offset + 2) & 0x3fff) === RTA_DST)
      return payload.toString('hex', offset + 4, offset + attrLen);
    offset += (attrLen + 3) & ~3;
  }
  return '';
}

/** A prefix as the filter needs it: address family, length, network bytes, and a label to return. */
export interface FilterPrefix {
  af: number;
  length: number;
  bytes: Buffer;
  label: string;
}

/**
 * Matches route messages to a set of prefixes from the raw rtmsg header and RTA_DST,
 * decoding nothing else: on a dump of a million routes this check is most of the
 * work, and a route whose family and length match no prefix costs two byte reads.
 */
/**
 * The native socket's route filter (native/src/netlink_socket.c, point 8): u32 table,
 * u32 count, then per prefix u8 family, u8 length, 2 bytes of padding and 16 bytes of
 * destination (network order, zero-filled).
 */
export function encodeRouteFilter(table: number, prefixes: readonly FilterPrefix[]): Buffer {
  const out = Buffer.alloc(8 + prefixes.length * 20);
  // The addon reads the two counts in host order.
  const write = endianness() === 'LE' ? out.writeUInt32LE.bind(out) : out.writeUInt32BE.bind(out);
  write(table, 0);
  write(prefixes.length, 4);
  prefixes.forEach((p, i) => {
    const at = 8 + i * 20;
    out[at] = p.af;
    out[at + 1] = p.length;
    if (p.length > 0) p.bytes.copy(out, at + 4, 0, Math.min(16, p.bytes.length));
  });
  return out;
}

export class PrefixFilter {
  private readonly byFamilyAndLength = new Map<number, Map<string, string>>();

  constructor(prefixes: FilterPrefix[]) {
    for (const p of prefixes) {
      const k = (p.af << 8) | p.length;
      let byBytes = this.byFamilyAndLength.get(k);
      if (!byBytes) this.byFamilyAndLength.set(k, (byBytes = new Map()));
      // A default route carries no RTA_DST at all.
      byBytes.set(p.length === 0 ? '' : p.bytes.toString('hex'), p.label);
    }
  }

  /** The label of the prefix the route message's destination is, exactly; else undefined. */
  match(payload: Buffer): string | undefined {
    if (payload.length < RTMSG_LENGTH) return undefined;
    const byBytes = this.byFamilyAndLength.get(((payload[0] ?? 0) << 8) | (payload[1] ?? 0));
    return byBytes?.get(routeDestinationHex(payload));
  }
}

export function decodeLink(payload: Buffer): DecodedLink {
  const { data, attrs } = rt.parseLinkMessage(payload);
  return { index: data.index ?? 0, name: attrs.ifname ?? '', up: Boolean(data.flags?.up), mtu: attrs.mtu ?? null };
}

export function decodeAddress(payload: Buffer): DecodedAddress {
  const { data, attrs } = rt.parseAddressMessage(payload);
  // IFA_FLAGS (32 bits) supersedes the 8-bit ifa_flags when present; both keep
  // tentative and dadfailed in the same bits, read here from the raw values.
  const flags = rt.formatAddressFlags(attrs.flags ?? data.flags ?? {});
  return {
    family: data.family ?? 0,
    index: data.index ?? 0,
    prefixLength: data.prefixlen ?? 0,
    // IFA_LOCAL is the interface's own address on point-to-point links; IFA_ADDRESS otherwise.
    address: attrs.local ?? attrs.address,
    tentative: (flags & IFA_F_TENTATIVE) !== 0,
    dadFailed: (flags & IFA_F_DADFAILED) !== 0,
  };
}
