// IP addresses and CIDRs as the kernel sees them: family plus network-order bytes. Parsing is
// ipaddr.js's; this module fixes the rules the agent needs (dotted-quad IPv4 only, no host bits
// in a CIDR) and the canonical text form.
import type { IPv4, IPv6 } from 'ipaddr.js';
import { requireModule } from '../require.js';

const ipaddr = requireModule('ipaddr.js') as typeof import('ipaddr.js');

export type Family = 4 | 6;

export interface IpAddress {
  readonly family: Family;
  /** Network byte order; 4 or 16 bytes. */
  readonly bytes: Buffer;
  /** Canonical text (RFC 5952 for IPv6). */
  readonly text: string;
}

export interface Cidr {
  readonly family: Family;
  /** The network address, network byte order. */
  readonly bytes: Buffer;
  readonly length: number;
  /** Canonical "address/length". */
  readonly text: string;
}

export class AddressError extends Error {
  readonly code = 'ERR_GWMODE_BAD_ADDRESS';
}

function fromParsed(parsed: IPv4 | IPv6): IpAddress {
  const v6 = parsed.kind() === 'ipv6';
  const text = v6 ? (parsed as IPv6).toRFC5952String() : parsed.toString();
  return { family: v6 ? 6 : 4, bytes: Buffer.from(parsed.toByteArray()), text };
}

export function parseAddress(text: string): IpAddress {
  const trimmed = text.trim();
  // ipaddr.js also accepts "10.1" and octal/hex parts; the kernel's users write dotted quads.
  const valid = trimmed.includes(':') ? ipaddr.IPv6.isValid(trimmed) : ipaddr.IPv4.isValidFourPartDecimal(trimmed);
  if (!valid) throw new AddressError(`"${text}" is not an IPv4 or IPv6 address`);
  return fromParsed(ipaddr.parse(trimmed));
}

export const addressFromBytes = (bytes: Buffer): IpAddress => fromParsed(ipaddr.fromByteArray([...bytes]));

/** Parses "network/length"; host bits must be zero, as in ovnkube's service-cidrs. */
export function parseCidr(text: string): Cidr {
  const [addressText = '', ...after] = text.trim().split('/');
  if (after.length === 0) throw new AddressError(`"${text}" is not a CIDR (expected address/length)`);
  const { family, bytes } = parseAddress(addressText);
  const lengthText = after.join('/');
  const length = Number(lengthText);
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(lengthText) || length > max)
    throw new AddressError(`"${text}" has an invalid prefix length (0-${max})`);
  const network = maskBytes(bytes, length);
  const cidr = `${addressFromBytes(network).text}/${length}`;
  if (!network.equals(bytes)) throw new AddressError(`"${text}" has host bits set; did you mean ${cidr}?`);
  return { family, bytes: network, length, text: cidr };
}

export const maskBytes = (bytes: Buffer, length: number): Buffer =>
  Buffer.from(bytes.map((b, i) => b & ((0xff << (8 - Math.max(0, Math.min(8, length - i * 8)))) & 0xff)));

/**
 * The n-th address (n < 256) of the subnet an address sits in: the .1 is the OVN
 * router port and the local-mode next hop (10.244.1.2/24 gives 10.244.1.1), the .2
 * the management port, the .4 of a masquerade subnet the 4.10+ next hop.
 */
export function addressInSubnet(address: Pick<IpAddress, 'bytes'>, prefixLength: number, n: number): IpAddress {
  const network = maskBytes(address.bytes, prefixLength);
  network[network.length - 1] = (network[network.length - 1] ?? 0) + n;
  return addressFromBytes(network);
}
