// Route messages (struct rtmsg, then rtattrs), decoded here: the netlink package's parser threw on the
// first attribute of a size it did not expect (RTA_VIA is `struct rtvia`, 2 + 4 or 2 + 16 bytes,
// include/uapi/linux/rtnetlink.h), and one such route on a watched prefix failed every pass.
// Rules:
//  1. Only the rtmsg header is required. Whatever else cannot be read (an unknown attribute, a wrong
//     size, a broken length) is named in `unmodelled`, which makes the route NotOurRoute and says why.
//  2. `unmodelled` names, in `ip route`'s words and a fixed order, all a next-hop replace would drop.
//  3. `gateway` is always an address of the route's own family (RTA_VIA is never taken as one).
import { addressFromBytes } from '../net/cidr.js';

export type DecodedNextHop = { oif: number; gateway: Buffer | undefined };

/** A route as a message carries it, for encoding (requests, and the fake kernel's answers). */
export interface RouteMessage {
  family: number;
  dstLen: number;
  /** Omitted for a default route. */
  dst?: Buffer | undefined;
  table: number;
  tos: number;
  protocol: number;
  scope: number;
  type: number;
  priority: number;
  gateway?: Buffer | undefined;
  oif?: number | undefined;
  mtu?: number | undefined;
}

/** A route as decoded: the message's fields, and what the agent does not model. */
export interface DecodedRoute extends RouteMessage {
  /** RTA_NH_ID: the next hop is a nexthop object (`ip route add ... nhid N`). */
  nhid?: number | undefined;
  /** RTA_MULTIPATH's next hops; undefined for a single-path route. */
  nexthops?: DecodedNextHop[] | undefined;
  /** What the route has beyond the fields above, in `ip route`'s words (`src 10.0.0.1`, `onlink`). */
  unmodelled: string[];
}

export const RTMSG_LENGTH = 12;
const RTNH_LENGTH = 8;
export const AF_INET = 2;
export const AF_INET6 = 10;
const NLA_TYPE_MASK = 0x3fff;
const NLA_F_NET_BYTEORDER = 0x4000;

// include/uapi/linux/rtnetlink.h, enum rtattr_type_t: an attribute's type is its name's index here.
const RTA_NAMES = (
  'UNSPEC DST SRC IIF OIF GATEWAY PRIORITY PREFSRC METRICS MULTIPATH PROTOINFO FLOW CACHEINFO SESSION MP_ALGO TABLE MARK' +
  ' MFC_STATS VIA NEWDST PREF ENCAP_TYPE ENCAP EXPIRES PAD UID TTL_PROPAGATE IP_PROTO SPORT DPORT NH_ID FLOWLABEL'
).split(' ');
const rta = (name: string): number => RTA_NAMES.indexOf(name);
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

type Attribute = { type: number; data: Buffer };

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

/** What a replace would drop, each with its place in the fixed order of rule 2. */
type Unmodelled = Array<[order: number, text: string]>;

function undecodable(out: Unmodelled, type: number, data: Buffer, within = ''): void {
  const name = RTA_NAMES[type] ? `RTA_${RTA_NAMES[type]}` : `attribute ${type}`;
  out.push([1000 + type, `undecodable ${within}${name} (${data.length} bytes)`]);
}

function metricsOf(data: Buffer, out: Unmodelled): number | undefined {
  const { attrs, broken } = attributes(data);
  let mtu: number | undefined;
  for (const { type, data: value } of attrs) {
    const rtax = type & NLA_TYPE_MASK;
    if (rtax === RTAX_MTU && value.length === 4) mtu = value.readUInt32LE(0);
    else if (rtax === RTAX_MTU) undecodable(out, rta('METRICS'), value, 'mtu in ');
    else out.push([rta('METRICS') + rtax / 100, RTAX_NAMES[rtax] ?? `metric ${rtax}`]);
  }
  if (broken !== undefined) undecodable(out, rta('METRICS'), data);
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
      if (type === rta('GATEWAY') && a.data.length === addressLength(family)) gateway = a.data;
      else if (type === rta('GATEWAY')) undecodable(out, type, a.data, 'nexthop ');
      else if (type === rta('VIA')) out.push([rta('MULTIPATH'), `nexthop ${viaText(a.data) ?? 'via (undecodable)'}`]);
    }
    if (broken !== undefined) undecodable(out, rta('MULTIPATH'), data);
    hops.push({ oif: data.readInt32LE(offset + 4), gateway });
    offset += (length + 3) & ~3;
  }
  if (offset < data.length) undecodable(out, rta('MULTIPATH'), data);
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
    // RTA_TABLE wins over the 8-bit header field (tables above 255).
    table: payload.readUInt8(4),
    tos: payload.readUInt8(3),
    protocol: payload.readUInt8(5),
    scope: payload.readUInt8(6),
    type: payload.readUInt8(7),
    priority: 0,
    unmodelled: [],
  };
  const out: Unmodelled = [];
  if (payload.readUInt8(2) > 0) out.push([0, 'from (a source prefix)']);
  const flags = payload.readUInt32LE(8);
  if (flags & RTNH_F_ONLINK) out.push([1, 'onlink']);
  if (flags & RTNH_F_PERVASIVE) out.push([2, 'pervasive']);
  const { attrs, broken } = attributes(payload.subarray(RTMSG_LENGTH));
  const size = addressLength(family);
  const u32 = (a: Attribute): number | undefined => (a.data.length === 4 ? a.data.readUInt32LE(0) : undefined);
  let encap: string | undefined;
  for (const a of attrs) {
    const type = a.type & NLA_TYPE_MASK;
    // No attribute this module reads comes in network byte order: one flagged so is undecodable.
    const name = a.type & NLA_F_NET_BYTEORDER ? 'byte order' : RTA_NAMES[type];
    const add = (text: string, order = type): number => out.push([order, text]);
    const bad = (): void => undecodable(out, type, a.data);
    switch (name) {
      case 'byte order':
        bad();
        break;
      case 'DST':
        if (a.data.length === size) route.dst = a.data;
        else bad();
        break;
      case 'SRC':
        add('from (a source prefix)', 0);
        break;
      case 'OIF':
      case 'PRIORITY':
      case 'TABLE':
      case 'NH_ID': {
        const value = u32(a);
        if (value === undefined) bad();
        else if (name === 'OIF') route.oif = value;
        else if (name === 'PRIORITY') route.priority = value;
        else if (name === 'TABLE') route.table = value;
        else add(`nhid ${(route.nhid = value)}`);
        break;
      }
      case 'GATEWAY':
        if (a.data.length === size) route.gateway = a.data;
        else bad();
        break;
      case 'VIA':
        add(viaText(a.data) ?? `undecodable RTA_VIA (${a.data.length} bytes)`);
        break;
      case 'PREFSRC':
        add(a.data.length === 4 || a.data.length === 16 ? `src ${addressFromBytes(a.data).text}` : 'src', 3);
        break;
      case 'METRICS':
        route.mtu = metricsOf(a.data, out);
        break;
      case 'MULTIPATH':
        route.nexthops = nextHopsOf(a.data, family, out);
        break;
      case 'FLOW':
        add('realms');
        break;
      case 'CACHEINFO':
        // The kernel gives a route's expiry in RTA_CACHEINFO (rta_expires, non-zero while it has one), not RTA_EXPIRES.
        if (a.data.length < 12) bad();
        else if (a.data.readInt32LE(8) !== 0) add('expires', rta('EXPIRES'));
        break;
      case 'PREF': {
        const pref = a.data.length === 1 ? a.data.readUInt8(0) : undefined;
        if (pref === undefined) bad();
        else if (pref !== 0) add(`pref ${ROUTER_PREF_NAMES[pref] ?? pref}`);
        break;
      }
      case 'ENCAP_TYPE':
        encap =
          a.data.length === 2 ? `encap ${ENCAP_NAMES[a.data.readUInt16LE(0)] ?? a.data.readUInt16LE(0)}` : 'encap';
        break;
      case 'ENCAP':
        encap ??= 'encap';
        break;
      case 'PAD':
        break;
      case undefined:
      default:
        add(PLAIN_WORDS[type] ?? name?.toLowerCase() ?? `attribute ${type}`);
    }
  }
  if (encap !== undefined) out.push([rta('ENCAP'), encap]);
  if (broken !== undefined) out.push([2000, `undecodable attributes from byte ${RTMSG_LENGTH + broken}`]);
  // An expiry may come twice (RTA_CACHEINFO and RTA_EXPIRES): said once.
  route.unmodelled = [...new Set(out.sort((a, b) => a[0] - b[0]).map(([, text]) => text))];
  return route;
}
