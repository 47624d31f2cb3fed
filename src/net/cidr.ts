// IP addresses and CIDRs as the kernel sees them: family plus network-order bytes.
// Parsing is ipaddr.js's; this module only fixes the rules the agent needs
// (dotted-quad IPv4 only, no host bits in a CIDR) and the canonical text form.
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

function toText(parsed: IPv4 | IPv6): string {
  return parsed.kind() === 'ipv6' ? (parsed as IPv6).toRFC5952String() : parsed.toString();
}

function fromParsed(parsed: IPv4 | IPv6): IpAddress {
  return {
    family: parsed.kind() === 'ipv6' ? 6 : 4,
    bytes: Buffer.from(parsed.toByteArray()),
    text: toText(parsed),
  };
}

export function parseAddress(text: string): IpAddress {
  const trimmed = text.trim();
  // ipaddr.js also accepts "10.1" and octal/hex parts; the kernel's users write dotted quads.
  const valid = trimmed.includes(':') ? ipaddr.IPv6.isValid(trimmed) : ipaddr.IPv4.isValidFourPartDecimal(trimmed);
  if (!valid) throw new AddressError(`"${text}" is not an IPv4 or IPv6 address`);
  return fromParsed(ipaddr.parse(trimmed));
}

export function addressFromBytes(bytes: Buffer): IpAddress {
  return fromParsed(ipaddr.fromByteArray([...bytes]));
}

/** Parses "network/length"; host bits must be zero, as in ovnkube's service-cidrs. */
export function parseCidr(text: string): Cidr {
  const trimmed = text.trim();
  const slash = trimmed.indexOf('/');
  if (slash < 0) throw new AddressError(`"${text}" is not a CIDR (expected address/length)`);
  const address = parseAddress(trimmed.slice(0, slash));
  const lengthText = trimmed.slice(slash + 1);
  const length = Number(lengthText);
  const max = address.family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(lengthText) || length > max) {
    throw new AddressError(`"${text}" has an invalid prefix length (0-${max})`);
  }
  const network = maskBytes(address.bytes, length);
  if (!network.equals(address.bytes)) {
    const fixed = `${addressFromBytes(network).text}/${length}`;
    throw new AddressError(`"${text}" has host bits set; did you mean ${fixed}?`);
  }
  return cidrOf(address.family, network, length);
}

export function cidrOf(family: Family, network: Buffer, length: number): Cidr {
  return { family, bytes: network, length, text: `${addressFromBytes(network).text}/${length}` };
}

export function maskBytes(bytes: Buffer, length: number): Buffer {
  const out = Buffer.from(bytes);
  for (let i = 0; i < out.length; i++) {
    const bits = Math.max(0, Math.min(8, length - i * 8));
    out[i] = (out[i] ?? 0) & ((0xff << (8 - bits)) & 0xff);
  }
  return out;
}

/**
 * The n-th address (n < 256) of the subnet an address sits in: the .1 is the OVN
 * router port and the local-mode next hop (10.244.1.2/24 gives 10.244.1.1), the .2
 * the management port, the .4 of a masquerade subnet the 4.10+ next hop.
 */
export function addressInSubnet(address: Pick<IpAddress, 'bytes'>, prefixLength: number, n: number): IpAddress {
  const network = maskBytes(address.bytes, prefixLength);
  const last = network.length - 1;
  network[last] = (network[last] ?? 0) + n;
  return addressFromBytes(network);
}
