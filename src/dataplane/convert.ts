// Kernel rows as the core's values, and the one prefix filter: shared by the reads
// (kernel.ts) and the subscriptions (subscription.ts).
import type { InterfaceAddress, Route } from '../core/route.js';
import { addressFromBytes, type Cidr, type Family } from '../net/cidr.js';
import { AF_INET, AF_INET6, routeKey, RT_TABLE_MAIN, type DecodedAddress, type DecodedRoute } from './codec.js';

export const afOf = (family: Family) => (family === 4 ? AF_INET : AF_INET6);
const familyOf = (af: number): Family | undefined => (af === AF_INET ? 4 : af === AF_INET6 ? 6 : undefined);

/**
 * Picks the main-table route messages whose destination is exactly one of a set of
 * prefixes, from the raw rtmsg header and attributes, decoding nothing else. The one
 * route filter of the agent, for dumps and notifications alike: a message whose family
 * and length match no prefix (nearly every row of a large table) costs two byte reads.
 */
export class PrefixFilter {
  private readonly byFamilyAndLength = new Map<number, Map<string, string>>();

  constructor(prefixes: readonly Cidr[]) {
    for (const p of prefixes) {
      const k = (afOf(p.family) << 8) | p.length;
      let byBytes = this.byFamilyAndLength.get(k);
      if (!byBytes) this.byFamilyAndLength.set(k, (byBytes = new Map()));
      // A default route carries no RTA_DST at all.
      byBytes.set(p.length === 0 ? '' : p.bytes.toString('hex'), p.text);
    }
  }

  /** Whether the route message at `at` of a datagram may match: by family and destination length, its first two bytes. */
  mayMatch(datagram: Buffer, at: number): boolean {
    return (
      datagram.length - at >= 2 &&
      this.byFamilyAndLength.has((datagram.readUInt8(at) << 8) | datagram.readUInt8(at + 1))
    );
  }

  /** The Cidr.text of the prefix this main-table route message is for, exactly; else undefined. */
  match(payload: Buffer): string | undefined {
    if (payload.length < 12) return undefined;
    const byBytes = this.byFamilyAndLength.get((payload.readUInt8(0) << 8) | payload.readUInt8(1));
    if (!byBytes) return undefined;
    const { dst, table } = routeKey(payload);
    return table === RT_TABLE_MAIN ? byBytes.get(dst) : undefined;
  }
}

export function toAddress(a: DecodedAddress): InterfaceAddress | undefined {
  const family = familyOf(a.family);
  if (!family || !a.address) return undefined;
  return {
    linkIndex: a.index,
    family,
    address: addressFromBytes(a.address).text,
    prefixLength: a.prefixLength,
    tentative: a.tentative,
    dadFailed: a.dadFailed,
  };
}

export function toRoute(prefix: Cidr, r: DecodedRoute, names: Map<number, string>): Route {
  return {
    key: { prefix: prefix.text, family: prefix.family, table: r.table, priority: r.priority },
    nextHop: {
      dev: r.oif === undefined ? null : (names.get(r.oif) ?? null),
      oif: r.oif ?? null,
      gateway: r.gateway ? addressFromBytes(r.gateway).text : null,
      mtu: r.mtu ?? null,
    },
    protocol: r.protocol,
    scope: r.scope,
    type: r.type,
    tos: r.tos,
    multipath: r.nexthops !== undefined,
    unmodelled: r.unmodelled,
  };
}
