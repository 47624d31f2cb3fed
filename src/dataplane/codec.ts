// The only module that imports the npm `netlink` package, and only for its
// message codec: its socket is not used (see native/src/netlink_socket.c).
import netlink from 'netlink';
import type { NetlinkMessage } from 'netlink';

export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;

export const NLM_F_REQUEST = 0x1;
export const NLM_F_MULTI = 0x2;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP_INTR = 0x10;
export const NLM_F_DUMP = 0x300;
export const NLM_F_REPLACE = 0x100;
export const NLM_F_CREATE = 0x400;
/** In an NLMSG_ERROR header: the original request's payload was left out. */
const NLM_F_CAPPED = 0x100;
/** In an NLMSG_ERROR header: extended-ack attributes follow. */
const NLM_F_ACK_TLVS = 0x200;
const NLMSGERR_ATTR_MSG = 1;

export const RTM_NEWLINK = 16;
export const RTM_DELLINK = 17;
export const RTM_GETLINK = 18;
export const RTM_NEWADDR = 20;
export const RTM_DELADDR = 21;
export const RTM_GETADDR = 22;
export const RTM_NEWROUTE = 24;
export const RTM_DELROUTE = 25;
export const RTM_GETROUTE = 26;

export const AF_INET = 2;
export const AF_INET6 = 10;
export const RT_TABLE_MAIN = 254;

export const RTNLGRP_LINK = 1;
export const RTNLGRP_IPV4_IFADDR = 5;
export const RTNLGRP_IPV4_ROUTE = 7;
export const RTNLGRP_IPV6_IFADDR = 9;
export const RTNLGRP_IPV6_ROUTE = 11;

const RTA_DST = 1;
const RTA_TABLE = 15;
const RTMSG_LENGTH = 12;

export type { NetlinkMessage };

export interface DecodedRoute {
  family: number;
  dstLen: number;
  dst: Buffer | undefined;
  gateway: Buffer | undefined;
  oif: number | undefined;
  priority: number;
  protocol: number;
  scope: number;
  type: number;
  table: number;
  mtu: number | undefined;
  tos: number;
  multipath: boolean;
}

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
  /** Positive errno; 0 for an acknowledgement. */
  errno: number;
  /** The kernel's extended-ack text, when it gave one. */
  extAck: string | undefined;
}

/** Splits one datagram into its netlink messages. */
export function parseDatagram(datagram: Buffer): NetlinkMessage[] {
  return netlink.parseMessages(datagram);
}

function encode(type: number, flags: number, seq: number, port: number, payload: Uint8Array[]): Buffer {
  return Buffer.concat(netlink.formatMessage({ type, flags, seq, port, data: payload }));
}

function streamOf(fill: (out: InstanceType<typeof netlink.AttrStream>) => void): Uint8Array[] {
  const out = new netlink.AttrStream();
  fill(out);
  return out.bufs;
}

export function encodeLinkDump(seq: number, port: number): Buffer {
  const payload = streamOf((out) => netlink.rt.formatLinkMessage({ kind: 'link', data: {}, attrs: {} }, out));
  return encode(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, seq, port, payload);
}

export function encodeAddressDump(seq: number, port: number): Buffer {
  const payload = streamOf((out) => netlink.rt.formatAddressMessage({ kind: 'address', data: {}, attrs: {} }, out));
  return encode(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, seq, port, payload);
}

/**
 * A route dump of one table and family. With NETLINK_GET_STRICT_CHK on the socket
 * the kernel applies the table (and oif, when given) filter itself and sends only
 * those routes; the kernel never filters a dump by destination, so callers still
 * pick the prefix out (see routeMatchesPrefix).
 */
export function encodeRouteDump(seq: number, port: number, family: number, table: number, oif?: number): Buffer {
  const payload = streamOf((out) =>
    netlink.rt.formatRouteMessage(
      {
        kind: 'route',
        data: { family, table: table < 256 ? table : 0 },
        attrs: oif === undefined ? { table } : { table, oif },
      },
      out,
    ),
  );
  return encode(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq, port, payload);
}

/**
 * "ip route get fibmatch ADDR": the kernel looks the address up (through the policy
 * rules, as a packet would be) and returns the FIB entry that matched, with the
 * table it came from. Cost is one trie lookup, whatever the table's size. A get
 * request cannot name a table (strict checking rejects RTA_TABLE and rtm_table), so
 * callers check the answer's table themselves.
 */
export function encodeFibMatch(seq: number, port: number, family: number, address: Buffer): Buffer {
  const payload = streamOf((out) =>
    netlink.rt.formatRouteMessage(
      { kind: 'route', data: { family, dstLen: address.length * 8, flags: { fibMatch: true } }, attrs: { dst: address } },
      out,
    ),
  );
  return encode(RTM_GETROUTE, NLM_F_REQUEST, seq, port, payload);
}

export interface RouteWrite {
  family: number;
  dst: Buffer;
  dstLen: number;
  table: number;
  priority: number;
  protocol: number;
  scope: number;
  type: number;
  gateway: Buffer;
  oif: number;
  mtu: number | undefined;
}

/** RTM_NEWROUTE with REPLACE and ACK: one atomic swap of an existing route's next hop. */
export function encodeRouteReplace(seq: number, port: number, r: RouteWrite): Buffer {
  const metrics = r.mtu === undefined ? undefined : { mtu: u32(r.mtu) };
  const payload = streamOf((out) =>
    netlink.rt.formatRouteMessage(
      {
        kind: 'route',
        data: {
          family: r.family,
          dstLen: r.dstLen,
          table: r.table < 256 ? r.table : 0,
          protocol: r.protocol,
          scope: r.scope,
          type: r.type,
        },
        attrs: {
          dst: r.dst,
          table: r.table,
          priority: r.priority,
          gateway: r.gateway,
          oif: r.oif,
          ...(metrics ? { metrics } : {}),
        },
      },
      out,
    ),
  );
  // REPLACE without CREATE: a key that matches no route (the route vanished, its
  // metric changed) fails with ENOENT instead of creating one beside the old.
  return encode(RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_REPLACE, seq, port, payload);
}

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(value >>> 0, 0);
  return b;
}

export function decodeError(msg: NetlinkMessage): DecodedError {
  const errno = -msg.data.readInt32LE(0);
  let extAck: string | undefined;
  if (msg.flags & NLM_F_ACK_TLVS) {
    // struct nlmsgerr = error code + the request's header (+ its payload unless capped)
    const requestLength = msg.data.readUInt32LE(4);
    const offset = 4 + (msg.flags & NLM_F_CAPPED ? 16 : requestLength);
    if (offset < msg.data.length) {
      netlink.parseAttributes(msg.data.subarray(offset), (attr) => {
        if (attr.type === NLMSGERR_ATTR_MSG) extAck = netlink.getString(attr.data);
      });
    }
  }
  return { errno, extAck };
}

/**
 * True when a route message's destination is exactly prefix/len, read straight
 * from the rtmsg header and RTA_DST without decoding the rest: on a table of a
 * million routes this check is what keeps a fallback dump cheap.
 */
export function routeMatchesPrefix(payload: Buffer, family: number, prefix: Buffer, len: number): boolean {
  if (payload.length < RTMSG_LENGTH || payload[0] !== family || payload[1] !== len) return false;
  if (len === 0) return true;
  let offset = RTMSG_LENGTH;
  while (offset + 4 <= payload.length) {
    const attrLen = payload.readUInt16LE(offset);
    const attrType = payload.readUInt16LE(offset + 2) & 0x3fff;
    if (attrLen < 4) return false;
    if (attrType === RTA_DST) return payload.subarray(offset + 4, offset + attrLen).equals(prefix);
    offset += (attrLen + 3) & ~3;
  }
  return false;
}

/** A route message's RTA_DST bytes, read from the raw message; undefined for a default route. */
export function routeDestination(payload: Buffer): Buffer | undefined {
  let offset = RTMSG_LENGTH;
  while (offset + 4 <= payload.length) {
    const attrLen = payload.readUInt16LE(offset);
    if (attrLen < 4) break;
    if ((payload.readUInt16LE(offset + 2) & 0x3fff) === RTA_DST) return payload.subarray(offset + 4, offset + attrLen);
    offset += (attrLen + 3) & ~3;
  }
  return undefined;
}

/** The table a route message belongs to (RTA_TABLE wins over the 8-bit header field). */
export function routeTable(payload: Buffer): number {
  let offset = RTMSG_LENGTH;
  while (offset + 4 <= payload.length) {
    const attrLen = payload.readUInt16LE(offset);
    if (attrLen < 4) break;
    if ((payload.readUInt16LE(offset + 2) & 0x3fff) === RTA_TABLE) return payload.readUInt32LE(offset + 4);
    offset += (attrLen + 3) & ~3;
  }
  return payload[4] ?? 0;
}

export function decodeRoute(payload: Buffer): DecodedRoute {
  const { data, attrs } = netlink.rt.parseRouteMessage(payload);
  const mtu = attrs.metrics?.mtu;
  return {
    family: data.family ?? 0,
    dstLen: data.dstLen ?? 0,
    dst: attrs.dst,
    gateway: attrs.gateway,
    oif: attrs.oif,
    priority: attrs.priority ?? 0,
    // The codec gives these as enum names; the raw rtmsg bytes are the exact values.
    protocol: payload[5] ?? 0,
    scope: payload[6] ?? 0,
    type: payload[7] ?? 0,
    table: attrs.table ?? Number(data.table ?? 0),
    mtu: mtu && mtu.length >= 4 ? mtu.readUInt32LE(0) : undefined,
    tos: payload[3] ?? 0,
    multipath: attrs.multipath !== undefined,
  };
}

export function decodeLink(payload: Buffer): DecodedLink {
  const { data, attrs } = netlink.rt.parseLinkMessage(payload);
  return { index: data.index ?? 0, name: attrs.ifname ?? '', up: Boolean(data.flags?.up), mtu: attrs.mtu ?? null };
}

export function decodeAddress(payload: Buffer): DecodedAddress {
  const { data, attrs } = netlink.rt.parseAddressMessage(payload);
  return {
    family: data.family ?? 0,
    index: data.index ?? 0,
    prefixLength: data.prefixlen ?? 0,
    // IFA_LOCAL is the interface's own address on point-to-point links; IFA_ADDRESS otherwise.
    address: attrs.local ?? attrs.address,
    // IFA_FLAGS (32 bits) supersedes the 8-bit header field when present.
    tentative: Boolean((attrs.flags ?? data.flags)?.tentative),
    dadFailed: Boolean((attrs.flags ?? data.flags)?.dadfailed),
  };
}
