// Kernel rows as the core's values, and the core's prefixes as the codec's filters:
// shared by the one-shot reads (kernel.ts) and the subscriptions (subscription.ts).
import type { InterfaceAddress, Route } from '../core/route.js';
import { addressFromBytes, type Cidr, type Family } from '../net/cidr.js';
import { AF_INET, AF_INET6, PrefixFilter, type DecodedAddress, type DecodedRoute, type FilterPrefix } from './codec.js';

export const afOf = (family: Family) => (family === 4 ? AF_INET : AF_INET6);
const familyOf = (af: number): Family | undefined => (af === AF_INET ? 4 : af === AF_INET6 ? 6 : undefined);

export function filterPrefixesOf(prefixes: readonly Cidr[]): FilterPrefix[] {
  return prefixes.map((p) => ({ af: afOf(p.family), length: p.length, bytes: p.bytes, label: p.text }));
}

export function prefixFilterOf(prefixes: readonly Cidr[]): PrefixFilter {
  return new PrefixFilter(filterPrefixesOf(prefixes));
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
