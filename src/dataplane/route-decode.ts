// Route messages (struct rtmsg, then rtattrs), decoded here: the netlink package's parser threw on the
// first attribute of a size it did not expect (RTA_VIA is `struct rtvia`, 2 + 4 or 2 + 16 bytes,
// include/uapi/linux/rtnetlink.h), and one such route on a watched prefix failed every pass (issue 25).
// Rules:
//  1. Only the rtmsg header is required. Whatever else cannot be read (an unknown attribute, a wrong
//     size, a broken length) is named in `unmodelled`, which makes the route NotOurRoute and says why.
//  2. `unmodelled` names, in `ip route`'s words and a fixed order, all a next-hop replace would drop.
//  3. `gateway` is always an address of the route's own family (RTA_VIA is never taken as one).
import { addressFromBytes } from '../net/cidr.js';

export interface DecodedNextHop {
  oif: number;
  gateway: Buffer | undefined;
}

/** A route as a message carries it, for encoding (requests, and the fake kernel's answers). */
export interface RouteMessage {
  family: number;
  dstLen: number;
  /** Omitted for a default route. */
  dst: Buffer | undefined;
  table: number;
  tos: number;
  protocol: number;
  scope: number;
  type: number;
  priority: number;
  gateway: Buffer | undefined;
  oif: number | undefined;
  mtu: number | undefined;
}

/** A route as decoded: the message's fields, and what the agent does not model. */
export interface DecodedRoute extends RouteMessage {
  /** RTA_NH_ID: the next hop is a nexthop object (`ip route add ... nhid N`). */
  nhid: number | undefined;
  /** RTA_MULTIPATH's next hops; undefined for a single-path route. */
  nexthops: DecodedNextHop[] | undefined;
  /** What the route has beyond the fields above, in `ip route`'s words (`src 10.0.0.1`, `onlink`). */
  unmodelled: string[];
}

export const RTMSG_LENGTH = 12;
const RTNH_LENGTH = 8;
export const AF_INET = 2;
export const AF_INET6 = 10;
const NLA_TYPE_MASK = 0x3fff;
const NLA_F_NET_BYTEORDER = 0x4000;

// include/uapi/linux/rtnetlink.h, enum rtattr_type_t: the names, and the types this module reads.
const RTA_NAMES = (
  'UNSPEC DST SRC IIF OIF GATEWAY PRIORITY PREFSRC METRICS MULTIPATH PROTOINFO FLOW CACHEINFO SESSION MP_ALGO TABLE MARK' +
  ' MFC_STATS VIA NEWDST PREF ENCAP_TYPE ENCAP EXPIRES PAD UID TTL_PROPAGATE IP_PROTO SPORT DPORT NH_ID FLOWLABEL'
).split(' ');
export const RTA = {
  DST: 1,
  SRC: 2,
  OIF: 4,
  GATEWAY: 5,
  PRIORITY: 6,
  PREFSRC: 7,
  METRICS: 8,
  MULTIPATH: 9,
  FLOW: 11,
  CACHEINFO: 12,
  TABLE: 15,
  VIA: 18,
  PREF: 20,
  ENCAP_TYPE: 21,
  ENCAP: 22,
  EXPIRES: 23,
  PAD: 24,
  NH_ID: 30,
} as const;
// What `ip route` calls the attributes a plain unicast route never has (some only answer a get), where
// it is not the attribute's name in lower case (`iif`, `mark`, `uid`, ...).
const PLAIN_WORDS: Record<number, string> = { 17: 'mfc stats', 19: 'as (MPLS)', 26: 'ttl-propagate', 27: 'ipproto' };
// RTAX_*, as iproute2 names them; RTAX_MTU (2) is the one the agent models.
const RTAX_MTU = 2;
const RTAX_NAMES = (
  ' lock mtu window rtt rttvar ssthresh cwnd advmss reordering hoplimit initcwnd features rto_min initrwnd quickack' +
  ' congctl fastopen_no_cookie'
).split(' ');
// include/uapi/linux/lwtunnel.h, enum lwtunnel_encap_types.
const ENCAP_NAMES = ['none', 'mpls', 'ip', 'ila', 'ip6', 'seg6', 'bpf', 'seg6local', 'rpl', 'ioam6', 'xfrm'];
// rtm_flags bits a route is configured with (RTNH_F_*); the others (dead, linkdown,
// offload, trap) are the kernel's state of it, not part of what a replace carries.
const RTNH_F_PERVASIVE = 2;
const RTNH_F_ONLINK = 4;
// RTA_PREF of an IPv6 route: medium (0) is what the kernel gives every route it is not told otherwise.
const ROUTER_PREF_NAMES: Record<number, string> = { 1: 'high', 3: 'low' };

interface Attribute {
  type: number;
  data: Buffer;
}

/** The attributes of `buf`; a length that breaks the framing ends the walk and is returned as `broken`. */
function attributes(buf: Buffer): { attrs: Attribute[]; broken: number | undefined } {
  const attrs: Attribute[] = [];
  let offset = 0;
  while (offset + 4 <= buf.length) {
    const length = buf.readUInt16LE(offset);
    if (length < 4 || offset + length > buf.length) return { attrs, broken: offset };
    attrs.push({ type: buf.readUInt16LE(offset + 2), data: buf.subarray(offset + 4, offset + length) });
    offset += (length + 3) & ~3;
  }
  return { attrs, broken: offset < buf.length ? offset : undefined };
}

const addressLength = (family: number): number | undefined =>
  family === AF_INET ? 4 : family === AF_INET6 ? 16 : undefined;
const familyWord = (family: number): string =>
  family === AF_INET ? 'inet' : family === AF_INET6 ? 'inet6' : `family ${family}`;

/** RTA_VIA: `via inet6 fe80::1`, as `ip route` shows it. */
function viaText(data: Buffer): string | undefined {
  if (data.length < 2) return undefined;
  const family = data.readUInt16LE(0);
  const address = data.subarray(2);
  if (address.length !== addressLength(family)) return `via ${familyWord(family)}`;
  return `via ${familyWord(family)} ${addressFromBytes(address).text}`;
}

class Unmodelled {
  private readonly items: Array<[order: number, text: string]> = [];
  add(order: number, text: string): void {
    this.items.push([order, text]);
  }
  undecodable(type: number, data: Buffer, within = ''): void {
    this.add(
      1000 + type,
      `undecodable ${within}${RTA_NAMES[type] ? `RTA_${RTA_NAMES[type]}` : `attribute ${type}`} (${data.length} bytes)`,
    );
  }
  list(): string[] {
    return this.items.sort((a, b) => a[0] - b[0]).map(([, text]) => text);
  }
}

function metricsOf(data: Buffer, out: Unmodelled): number | undefined {
  const { attrs, broken } = attributes(data);
  let mtu: number | undefined;
  for (const { type, data: value } of attrs) {
    const rtax = type & NLA_TYPE_MASK;
    if (rtax === RTAX_MTU && value.length === 4) mtu = value.readUInt32LE(0);
    else if (rtax === RTAX_MTU) out.undecodable(RTA.METRICS, value, 'mtu in ');
    else out.add(RTA.METRICS + rtax / 100, RTAX_NAMES[rtax] ?? `metric ${rtax}`);
  }
  if (broken !== undefined) out.undecodable(RTA.METRICS, data);
  return mtu;
}

function nextHopsOf(data: Buffer, family: number, out: Unmodelled): DecodedNextHop[] {
  const hops: DecodedNextHop[] = [];
  let offset = 0;
  while (offset + RTNH_LENGTH <= data.length) {
    const length = data.readUInt16LE(offset);
    if (length < RTNH_LENGTH || offset + length > data.length) break;
    let gateway: Buffer | undefined;
    const { attrs, broken } = attributes(data.subarray(offset + RTNH_LENGTH, offset + length));
    for (const a of attrs) {
      const type = a.type & NLA_TYPE_MASK;
      if (type === RTA.GATEWAY && a.data.length === addressLength(family)) gateway = a.data;
      else if (type === RTA.GATEWAY) out.undecodable(type, a.data, 'nexthop ');
      else if (type === RTA.VIA) out.add(RTA.MULTIPATH, `nexthop ${viaText(a.data) ?? 'via (undecodable)'}`);
    }
    if (broken !== undefined) out.undecodable(RTA.MULTIPATH, data);
    hops.push({ oif: data.readInt32LE(offset + 4), gateway });
    offset += (length + 3) & ~3;
  }
  if (offset < data.length) out.undecodable(RTA.MULTIPATH, data);
  return hops;
}

/**
 * Decodes a route message. Throws only when it is shorter than struct rtmsg; whatever
 * else it cannot read is named in `unmodelled` (rule 1).
 */
export function decodeRoute(payload: Buffer): DecodedRoute {
  if (payload.length < RTMSG_LENGTH)
    throw new Error(`route message of ${payload.length} bytes, under struct rtmsg's ${RTMSG_LENGTH}`);
  const family = payload.readUInt8(0);
  const route: DecodedRoute = {
    family,
    dstLen: payload.readUInt8(1),
    dst: undefined,
    // RTA_TABLE wins over the 8-bit header field (tables above 255).
    table: payload.readUInt8(4),
    tos: payload.readUInt8(3),
    protocol: payload.readUInt8(5),
    scope: payload.readUInt8(6),
    type: payload.readUInt8(7),
    priority: 0,
    gateway: undefined,
    oif: undefined,
    mtu: undefined,
    nhid: undefined,
    nexthops: undefined,
    unmodelled: [],
  };
  const out = new Unmodelled();
  if (payload.readUInt8(2) > 0) out.add(0, 'from (a source prefix)');
  const flags = payload.readUInt32LE(8);
  if (flags & RTNH_F_ONLINK) out.add(1, 'onlink');
  if (flags & RTNH_F_PERVASIVE) out.add(2, 'pervasive');
  const { attrs, broken } = attributes(payload.subarray(RTMSG_LENGTH));
  const size = addressLength(family);
  const u32 = (a: Attribute): number | undefined => (a.data.length === 4 ? a.data.readUInt32LE(0) : undefined);
  let encap: string | undefined;
  for (const a of attrs) {
    const type = a.type & NLA_TYPE_MASK;
    const bad = (): void => out.undecodable(type, a.data);
    if (a.type & NLA_F_NET_BYTEORDER) {
      bad();
      continue;
    }
    switch (type) {
      case RTA.DST:
        if (a.data.length === size) route.dst = a.data;
        else bad();
        break;
      case RTA.SRC:
        out.add(0, 'from (a source prefix)');
        break;
      case RTA.OIF:
      case RTA.PRIORITY:
      case RTA.TABLE:
      case RTA.NH_ID: {
        const value = u32(a);
        if (value === undefined) bad();
        else if (type === RTA.OIF) route.oif = value;
        else if (type === RTA.PRIORITY) route.priority = value;
        else if (type === RTA.TABLE) route.table = value;
        else {
          route.nhid = value;
          out.add(type, `nhid ${value}`);
        }
        break;
      }
      case RTA.GATEWAY:
        if (a.data.length === size) route.gateway = a.data;
        else bad();
        break;
      case RTA.VIA:
        out.add(type, viaText(a.data) ?? `undecodable RTA_VIA (${a.data.length} bytes)`);
        break;
      case RTA.PREFSRC:
        out.add(3, a.data.length === 4 || a.data.length === 16 ? `src ${addressFromBytes(a.data).text}` : 'src');
        break;
      case RTA.METRICS:
        route.mtu = metricsOf(a.data, out);
        break;
      case RTA.MULTIPATH:
        route.nexthops = nextHopsOf(a.data, family, out);
        break;
      case RTA.FLOW:
        out.add(type, 'realms');
        break;
      case RTA.CACHEINFO:
        // The kernel gives a route's expiry in RTA_CACHEINFO (rta_expires, non-zero while it has one), not RTA_EXPIRES.
        if (a.data.length < 12) bad();
        else if (a.data.readInt32LE(8) !== 0) out.add(RTA.EXPIRES, 'expires');
        break;
      case RTA.EXPIRES:
        out.add(type, 'expires');
        break;
      case RTA.PREF: {
        const pref = a.data.length === 1 ? a.data.readUInt8(0) : undefined;
        if (pref === undefined) bad();
        else if (pref !== 0) out.add(type, `pref ${ROUTER_PREF_NAMES[pref] ?? pref}`);
        break;
      }
      case RTA.ENCAP_TYPE:
        encap =
          a.data.length === 2 ? `encap ${ENCAP_NAMES[a.data.readUInt16LE(0)] ?? a.data.readUInt16LE(0)}` : 'encap';
        break;
      case RTA.ENCAP:
        encap ??= 'encap';
        break;
      case RTA.PAD:
        break;
      default:
        out.add(type, PLAIN_WORDS[type] ?? RTA_NAMES[type]?.toLowerCase() ?? `attribute ${type}`);
    }
  }
  if (encap !== undefined) out.add(RTA.ENCAP, encap);
  if (broken !== undefined) out.add(2000, `undecodable attributes from byte ${RTMSG_LENGTH + broken}`);
  // An expiry may come twice (RTA_CACHEINFO and RTA_EXPIRES): said once.
  route.unmodelled = [...new Set(out.list())];
  return route;
}
