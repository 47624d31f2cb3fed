// One netlink socket and what travels over it; NetlinkTransport is where tests put a scripted fake
// kernel (test/helpers/fake-transport.ts) to inject the faults handled here. Guarantees:
//  1. Requests and notifications never share a socket (a notification inside a dump broke the
//     `netlink` package's socket). Requests go one at a time.
//  2. A reply to another sequence number (a request that timed out) is dropped; a dump marked
//     NLM_F_DUMP_INTR is retried.
//  3. Data that does not parse fails the pending request, or is a `lost` event, with
//     ERR_GWMODE_NETLINK_DECODE; it never escapes into the poll callback.
//  4. A socket error never stops reading (native/src/netlink_socket.c, point 5). ENOBUFS is `lost` on
//     a subscription and fails the pending request on the request socket (its answer may be gone).
import { addon, type NetlinkOpenOptions } from '../native/addon.js';
import * as nl from './codec.js';
import { NetlinkDecodeError, NetlinkError, NetlinkTimeoutError } from './errors.js';

export type { NetlinkOpenOptions };

export interface NetlinkSocket {
  /** The port id the kernel assigned at bind. */
  readonly portId: number;
  /** Throws an errno-shaped Error. */
  send(datagram: Buffer): void;
  /** One whole datagram (valid until the next recv), or null when none is queued; throws ENOBUFS. */
  recv(): Buffer | null;
  setRef(ref: boolean): void;
  /** Idempotent. */
  close(): void;
}

export interface NetlinkTransport {
  /** onReadable(status, rearm): see NativeAddon.netlinkOpen. */
  open(options: NetlinkOpenOptions, onReadable: (status: number, rearm: number) => void): NetlinkSocket;
}

export const nativeTransport: NetlinkTransport = {
  open(options, onReadable) {
    const handle = addon.netlinkOpen(options, onReadable);
    let portId: number;
    try {
      portId = addon.netlinkPortId(handle);
    } catch (err) {
      addon.netlinkClose(handle);
      throw err;
    }
    let buffer = Buffer.allocUnsafe(64 << 10);
    return {
      portId,
      send: (datagram) => void addon.netlinkSend(handle, datagram),
      recv() {
        for (;;) {
          const n = addon.netlinkRecv(handle, buffer);
          if (n === null || n >= 0) return n === null ? null : buffer.subarray(0, n);
          buffer = Buffer.allocUnsafe(-n);
        }
      },
      setRef: (ref) => addon.netlinkSetRef(handle, ref),
      close: () => addon.netlinkClose(handle),
    };
  },
};

export const MAX_DUMP_ATTEMPTS = 5;
export const [EINTR, EIO, EBADF, ENODEV, EINVAL, ENOBUFS] = [4, 5, 9, 19, 22, 105];

function toNetlinkError(err: unknown, what: string): NetlinkError {
  if (err instanceof NetlinkError) return err;
  const errno = (err as { errno?: unknown }).errno;
  if (err instanceof Error && typeof errno === 'number')
    return new NetlinkError(errno, (err as { syscall?: string }).syscall || what, undefined, { cause: err });
  return new NetlinkError(EIO, what, String(err), { cause: err });
}

const decodeFailure = (what: string, err: unknown) =>
  new NetlinkDecodeError(`${what}: malformed netlink data: ${(err as Error)?.message ?? String(err)}`, { cause: err });

/** Reads every queued datagram (guarantee 4); `fail` gets each error, `skip` filters messages. */
export function drain(
  socket: NetlinkSocket,
  open: () => boolean,
  fail: (err: NetlinkError | NetlinkDecodeError) => void,
  onMessage: (msg: nl.NetlinkMessage) => void,
  skip?: () => nl.Skip | undefined,
): void {
  while (open()) {
    let datagram: Buffer | null;
    try {
      datagram = socket.recv();
    } catch (err) {
      const e = toNetlinkError(err, 'recvmsg');
      fail(e);
      // ENOBUFS is cleared by the read that reported it; anything else may not be.
      if (e.errno === ENOBUFS) continue;
      return;
    }
    if (datagram === null) return;
    let messages: nl.NetlinkMessage[];
    try {
      messages = nl.parseDatagram(datagram, skip?.());
    } catch (err) {
      fail(decodeFailure('netlink datagram', err));
      continue;
    }
    for (const msg of messages) onMessage(msg);
  }
}

interface Pending {
  seq: number;
  what: string;
  skip: nl.Skip | undefined;
  onMessage: (msg: nl.NetlinkMessage) => void;
  resolve: (result: { interrupted: boolean }) => void;
  reject: (err: Error) => void;
  interrupted: boolean;
  timer: NodeJS.Timeout;
}

/** A socket that carries one request at a time (guarantees 1 and 2). */
export class RequestChannel {
  private readonly socket: NetlinkSocket;
  private seq = Math.floor(Math.random() * 0x7fffffff);
  private pending: Pending | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Set when polling could not be re-armed: the socket is deaf from then on. */
  private broken: NetlinkError | undefined;

  constructor(
    transport: NetlinkTransport,
    private readonly timeoutMs = 10_000,
  ) {
    this.socket = transport.open({ strictCheck: true, extAck: true, rcvbuf: 4 << 20 }, (_status, rearm) => {
      if (rearm < 0) {
        this.broken = new NetlinkError(-rearm, 'uv_poll_start (request socket)');
        this.finish()?.reject(this.broken);
      }
      this.drain();
    });
    this.socket.setRef(false);
  }

  /** Sends the message built for the next sequence number and feeds each reply to onMessage until the kernel ends the exchange. */
  exchange(
    what: string,
    build: (seq: number, port: number) => Buffer,
    onMessage: (msg: nl.NetlinkMessage) => void,
    skip?: nl.Skip,
  ): Promise<{ interrupted: boolean }> {
    const run = () =>
      new Promise<{ interrupted: boolean }>((resolve, reject) => {
        if (this.closed || this.broken) return reject(this.broken ?? new NetlinkError(EBADF, what));
        const seq = (this.seq = (this.seq + 1) & 0x7fffffff || 1);
        const timer = setTimeout(() => {
          this.finish();
          reject(new NetlinkTimeoutError(`${what}: no answer from the kernel in ${this.timeoutMs} ms`));
        }, this.timeoutMs);
        this.pending = { seq, what, skip, onMessage, resolve, reject, interrupted: false, timer };
        this.socket.setRef(true);
        try {
          this.socket.send(build(seq, this.socket.portId));
        } catch (err) {
          this.finish();
          return reject(toNetlinkError(err, `${what} (sendto)`));
        }
        // The kernel answers most requests inside the send: read now, not a turn of the loop later.
        this.drain();
      });
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private finish(): Pending | undefined {
    const p = this.pending;
    if (p) clearTimeout(p.timer);
    this.pending = undefined;
    if (!this.closed) this.socket.setRef(false);
    return p;
  }

  private drain(): void {
    drain(
      this.socket,
      () => !this.closed,
      (err) => {
        const p = this.finish();
        p?.reject(err instanceof NetlinkDecodeError ? decodeFailure(p.what, err.cause) : err);
      },
      (msg) => this.handle(msg),
      () => this.pending?.skip,
    );
  }

  private handle(msg: nl.NetlinkMessage): void {
    const p = this.pending;
    if (!p || msg.seq !== p.seq) return;
    if (msg.flags & nl.NLM_F_DUMP_INTR) p.interrupted = true;
    try {
      if (msg.type === nl.NLMSG_ERROR || msg.type === nl.NLMSG_DONE) {
        const { errno, extAck } = nl.decodeAck(msg);
        this.finish();
        if (errno === 0) p.resolve({ interrupted: p.interrupted });
        else p.reject(new NetlinkError(errno, p.what, extAck));
        return;
      }
      p.onMessage(msg);
    } catch (err) {
      this.finish();
      p.reject(err instanceof NetlinkError ? err : decodeFailure(p.what, err));
      return;
    }
    if (!(msg.flags & nl.NLM_F_MULTI)) {
      this.finish();
      p.resolve({ interrupted: p.interrupted });
    }
  }

  close(): void {
    if (this.closed) return;
    const p = this.finish();
    this.closed = true;
    this.socket.close();
    p?.reject(new NetlinkError(EBADF, `${p.what} (socket closed)`));
  }
}
