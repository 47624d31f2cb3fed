// --metrics-address HOST:PORT: where the TCP listener for /metrics binds. A literal
// address only (no name to resolve at start), IPv6 in brackets.
import net from 'node:net';

export type ListenAddress = { host: string; port: number };

export function parseListenAddress(text: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || host === undefined) throw new Error(`"${text}" is not HOST:PORT (IPv6 as [ADDR]:PORT)`);
  if (net.isIP(host) === 0) throw new Error(`"${host}" is not an IP address`);
  if (m[1] !== undefined && net.isIP(host) !== 6) throw new Error(`"${text}": only an IPv6 address goes in brackets`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`port ${m[3]} is not 1-65535`);
  return { host, port };
}
