// rtnetlink messages: the only module that imports the npm `netlink` package, for its
// codec only (its socket breaks on a notification inside a dump; see kernel.ts). Two files
// of the package, not its index, which also loads its socket, native binding and 240 KB of
// nl80211, WireGuard and genl codecs. Route messages are decoded in route-decode.ts.
import type { NetlinkMessage } from 'netlink';
import type { Cidr } from '../net/cidr.js';
import { requireModule } from '../require.js';
import { AF_INET, AF_INET6, RTMSG_LENGTH, type RouteMessage } from './route-decode.js';

export * from './route-decode.js';

const structs = requireModule('netlink/dist/structs.js') as typeof import('netlink/dist/structs.js');
const rt = requireModule('netlink/dist/rt/structs.js') as typeof import('netlink/dist/rt/structs.js');

export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;

const NLM_F_REQUEST = 0x1;
export const NLM_F_MULTI = 0x2;
const NLM_F_ACK = 0x4;
export const NLM_F_DUMP_INTR = 0x10;
export const NLM_F_DUMP = 0x300;
export const NLM_F_REPLACE = 0x100;
export const NLM_F_CREATE = 0x400;
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

/** In a dump request: every family. */
export const AF_UNSPEC = 0;
export const RT_TABLE_MAIN = 254;

export const RTNLGRP_LINK = 1;
export const RTNLGRP_IPV4_IFADDR = 5;
export const RTNLGRP_IPV4_ROUTE = 7;
export const RTNLGRP_IPV6_IFADDR = 9;
export const RTNLGRP_IPV6_ROUTE = 11;
export const RTNLGRP_NEXTHOP = 32;

const RTA_DST = 1;
const RTA_TABLE = 15;
const IFA_F_DADFAILED = 0x08;
const IFA_F_TENTATIVE = 0x40;

export type { NetlinkMessage };
/** Whether to leave out the message of `type` whose payload starts at `payload` in `datagram`. */
export type Skip = (type: number, datagram: Buffer, payload: number) => boolean;

/** errno: positive; 0 for an acknowledgement or a clean end of dump. extAck: the kernel's text, when it gave one. */
type DecodedError = { errno: number; extAck: string | undefined };

/**
 * Splits one datagram into its netlink messages, each a copy; throws when a length is wrong. `skip`
 * sees each message's type and payload offset before it is cut out: a dump of a million
 * routes then costs no object per row it does not want. A message marked
 * NLM_F_DUMP_INTR is never skipped: the dump's consistency flag must reach the reader.
 */
export function parseDatagram(datagram: Buffer, skip?: Skip): NetlinkMessage[] {
  const messages: NetlinkMessage[] = [];
  for (let at = 0; at < datagram.length;) {
    const length = datagram.length - at >= NLMSG_HDRLEN ? datagram.readUInt32LE(at) : 0;
    if (length < NLMSG_HDRLEN || length > datagram.length - at) throw new Error(`Invalid header length (${length})`);
    const type = datagram.readUInt16LE(at + 4);
    const flags = datagram.readUInt16LE(at + 6);
    if (!skip?.(type, datagram, at + NLMSG_HDRLEN) || flags & NLM_F_DUMP_INTR) {
      const seq = datagram.readUInt32LE(at + 8);
      const port = datagram.readUInt32LE(at + 12);
      // A copy: the transport reads the next datagram into the same memory.
      const data = Buffer.from(datagram.subarray(at + NLMSG_HDRLEN, at + length));
      messages.push({ type, flags, seq, port, data });
    }
    at += (length + 3) & ~3;
  }
  return messages;
}

type Fill = (out: InstanceType<typeof structs.AttrStream>) => void;

function encode(type: number, flags: number, seq: number, port: number, fill: Fill): Buffer {
  const out = new structs.AttrStream();
  fill(out);
  return Buffer.concat(structs.formatMessage({ type, flags, seq, port, data: out.bufs }));
}

/** One link, by index or by name: the kernel answers with it or ENODEV. */
export function encodeLinkGet(seq: number, port: number, which: { index: number } | { name: string }): Buffer {
  const [data, attrs] = 'index' in which ? [{ index: which.index }, {}] : [{}, { ifname: which.name }];
  return encode(RTM_GETLINK, NLM_F_REQUEST, seq, port, (out) =>
    rt.formatLinkMessage({ kind: 'link', data, attrs }, out),
  );
}

const dump = (type: number, fill: Fill) => (seq: number, port: number) =>
  encode(type, NLM_F_REQUEST | NLM_F_DUMP, seq, port, fill);
/** An address dump of one family (AF_UNSPEC: all): the kernel sends only that family's addresses. */
export const encodeAddressDump = (seq: number, port: number, family: number): Buffer =>
  dump(RTM_GETADDR, (out) => rt.formatAddressMessage({ kind: 'address', data: { family }, attrs: {} }, out))(seq, port);

/** The link index of the address message whose payload starts at `at` (ifaddrmsg's ifa_index). */
export const addressIndex = (datagram: Buffer, at: number): number =>
  datagram.length - at >= 8 ? datagram.readUInt32LE(at + 4) : 0;

/**
 * A route dump of one table and family (AF_UNSPEC: all). With NETLINK_GET_STRICT_CHK on
 * the socket the kernel applies the table filter itself and sends only that table's routes;
 * the kernel never filters a dump by destination, so callers pick their prefixes
 * out of the raw bytes (PrefixFilter) and decode only those.
 */
export const encodeRouteDump = (seq: number, port: number, family: number, table: number): Buffer =>
  dump(RTM_GETROUTE, (out) =>
    rt.formatRouteMessage({ kind: 'route', data: { family, table: table < 256 ? table : 0 }, attrs: { table } }, out),
  )(seq, port);

export function encodeRoute(type: number, flags: number, seq: number, port: number, r: RouteMessage): Buffer {
  const { family, dstLen, tos, protocol, scope } = r;
  const data = { family, dstLen, tos, table: r.table < 256 ? r.table : 0, protocol, scope, type: r.type };
  const attrs = {
    ...(r.dst ? { dst: r.dst } : {}),
    table: r.table,
    priority: r.priority,
    ...(r.gateway ? { gateway: r.gateway } : {}),
    ...(r.oif === undefined ? {} : { oif: r.oif }),
    ...(r.mtu === undefined ? {} : { metrics: { mtu: Buffer.from(new Uint32Array([r.mtu]).buffer) } }),
  };
  return encode(type, flags, seq, port, (out) => rt.formatRouteMessage({ kind: 'route', data, attrs }, out));
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

/**
 * NLMSG_ERROR (struct nlmsgerr: the error, the request's header, its payload unless capped) or NLMSG_DONE
 * (an int error, no echoed request; a dump the kernel rejects, e.g. under strict checking, ends this way),
 * then, with NLM_F_ACK_TLVS, ext-ack attributes. A DONE too short for its error is a clean end.
 */
export function decodeAck(msg: NetlinkMessage): DecodedError {
  if (msg.type === NLMSG_DONE && msg.data.length < 4) return { errno: 0, extAck: undefined };
  const ack: DecodedError = { errno: 0 - msg.data.readInt32LE(0), extAck: undefined };
  if (!(msg.flags & NLM_F_ACK_TLVS)) return ack;
  // The echoed request is padded to 4 bytes, as every netlink message is (a link name need not be).
  const echoed =
    msg.type === NLMSG_DONE ? 0 : msg.flags & NLM_F_CAPPED ? NLMSG_HDRLEN : (msg.data.readUInt32LE(4) + 3) & ~3;
  structs.parseAttributes(msg.data.subarray(4 + echoed), (attr) => {
    if (attr.type === NLMSGERR_ATTR_MSG) ack.extAck = structs.getString(attr.data);
  });
  return ack;
}

/**
 * The destination (RTA_DST's bytes as hex; '' for none: a default route) and the table
 * (RTA_TABLE, which wins over the 8-bit header field) of a route message, from its raw
 * attributes: on a dump of a million routes this is most of the work, and only the rows
 * of a wanted prefix are decoded.
 */
export function routeKey(payload: Buffer): { dst: string; table: number } {
  let dst = '';
  let table = payload[4] ?? 0;
  for (let offset = RTMSG_LENGTH; offset + 4 <= payload.length;) {
    const attrLen = payload.readUInt16LE(offset);
    if (attrLen < 4) break;
    const type = payload.readUInt16LE(offset + 2) & 0x3fff;
    if (type === RTA_DST) dst = payload.toString('hex', offset + 4, offset + attrLen);
    else if (type === RTA_TABLE && attrLen >= 8) table = payload.readUInt32LE(offset + 4);
    offset += (attrLen + 3) & ~3;
  }
  return { dst, table };
}

export type DecodedLink = ReturnType<typeof decodeLink>;
export function decodeLink(payload: Buffer) {
  const { data, attrs } = rt.parseLinkMessage(payload);
  return { index: data.index ?? 0, name: attrs.ifname ?? '', up: Boolean(data.flags?.up), mtu: attrs.mtu ?? null };
}

export type DecodedAddress = ReturnType<typeof decodeAddress>;
export function decodeAddress(payload: Buffer) {
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

/**
 * Picks the main-table route messages whose destination is exactly one of a set of
 * prefixes from the raw bytes, decoding nothing else: for dumps and notifications alike. A
 * message whose family and length match no prefix (nearly every row of a large table) costs
 * two byte reads.
 */
export class PrefixFilter {
  private readonly byFamilyAndLength = new Map<number, Map<string, string>>();

  constructor(prefixes: readonly Cidr[]) {
    for (const p of prefixes) {
      const k = ((p.family === 4 ? AF_INET : AF_INET6) << 8) | p.length;
      let byBytes = this.byFamilyAndLength.get(k);
      if (!byBytes) this.byFamilyAndLength.set(k, (byBytes = new Map()));
      // A default route carries no RTA_DST at all.
      byBytes.set(p.length === 0 ? '' : p.bytes.toString('hex'), p.text);
    }
  }

  /** Whether the route message at `at` of a datagram may match, by its first two bytes. */
  mayMatch(datagram: Buffer, at: number): boolean {
    return datagram.length - at >= 2 && this.byFamilyAndLength.has(datagram.readUInt16BE(at));
  }

  /** The Cidr.text of the prefix this main-table route message is for, exactly; else undefined. */
  match(payload: Buffer): string | undefined {
    if (payload.length < 12) return undefined;
    const byBytes = this.byFamilyAndLength.get(payload.readUInt16BE(0));
    if (!byBytes) return undefined;
    const { dst, table } = routeKey(payload);
    return table === RT_TABLE_MAIN ? byBytes.get(dst) : undefined;
  }
}
