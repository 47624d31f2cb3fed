// Errors of the dataplane, shaped like Node's system errors: a stable `code`
// (ENOBUFS, EPERM, ...), the positive `errno`, the `syscall` or request that failed,
// and the kernel's own extended-ack text when it gave one.
import os from 'node:os';

export class NetlinkError extends Error {
  readonly errno: number;
  readonly code: string;
  readonly syscall: string;
  readonly extAck: string | undefined;

  constructor(errno: number, syscall: string, extAck?: string, options?: { cause?: unknown }) {
    const code = codeOf(errno);
    const detail = extAck ? `${extAck}` : describe(errno);
    super(`${syscall} ${code}: ${detail}`, options);
    this.name = 'NetlinkError';
    this.errno = errno;
    this.code = code;
    this.syscall = syscall;
    this.extAck = extAck;
  }
}

export class NetlinkTimeoutError extends Error {
  readonly code = 'ERR_GWMODE_NETLINK_TIMEOUT';
}

/** A datagram or message that does not parse: cut short, or with a bad length. */
export class NetlinkDecodeError extends Error {
  readonly code = 'ERR_GWMODE_NETLINK_DECODE';
}

const names = new Map<number, string>(
  Object.entries(os.constants.errno).map(([name, value]) => [value, name] as [number, string]),
);

function codeOf(errno: number): string {
  return names.get(errno) ?? `E${errno}`;
}

const descriptions: Record<string, string> = {
  EPERM: 'operation not permitted (the agent needs CAP_NET_ADMIN in the node network namespace)',
  ENETUNREACH: 'network is unreachable',
  ESRCH: 'no such route',
  ENOENT: 'no such entry',
  ENODEV: 'no such device',
  EEXIST: 'route exists',
  EINVAL: 'invalid argument',
  ENOBUFS: 'the kernel dropped netlink messages (receive buffer full)',
};

function describe(errno: number): string {
  return descriptions[codeOf(errno)] ?? `errno ${errno}`;
}
