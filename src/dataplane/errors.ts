// Errors of the dataplane, shaped like Node's system errors: a stable `code` (ENOBUFS, EPERM, ...),
// the positive `errno`, the `syscall` or request that failed, and the kernel's extended-ack text.
import os from 'node:os';
import { getSystemErrorMap } from 'node:util';

// The code is the errno's name as os.constants has it (EOPNOTSUPP, not libuv's ENOTSUP: metric
// labels and alerts key on it); the text is the system's.
const codes = new Map(Object.entries(os.constants.errno).map(([name, errno]) => [errno, name]));
const texts = getSystemErrorMap();
// Where the system's text would mislead about a route (ENOENT: "no such file or directory").
const HINTS: Record<string, string> = {
  EPERM: 'operation not permitted (the agent needs CAP_NET_ADMIN in the node network namespace)',
  ENOENT: 'no such entry',
  ESRCH: 'no such route',
  EEXIST: 'route exists',
  ENOBUFS: 'the kernel dropped netlink messages (receive buffer full)',
};

export class NetlinkError extends Error {
  readonly errno: number;
  readonly code: string;
  readonly syscall: string;
  readonly extAck: string | undefined;

  constructor(errno: number, syscall: string, extAck?: string, options?: { cause?: unknown }) {
    const code = codes.get(errno) ?? `E${errno}`;
    super(`${syscall} ${code}: ${extAck || HINTS[code] || texts.get(-errno)?.[1] || `errno ${errno}`}`, options);
    this.name = 'NetlinkError';
    this.errno = errno;
    this.code = code;
    this.syscall = syscall;
    this.extAck = extAck;
  }
}

/** The base of an Error with a stable `code` (its message may change, its code does not). */
export const coded = (code: string) =>
  class extends Error {
    readonly code = code;
  };

export class NetlinkTimeoutError extends coded('ERR_GWMODE_NETLINK_TIMEOUT') {}
/** A datagram or message that does not parse: cut short, or with a bad length. */
export class NetlinkDecodeError extends coded('ERR_GWMODE_NETLINK_DECODE') {}
