// One netlink socket and what travels over it. Two uses, never mixed on one socket:
//  - requests (dumps, gets, writes): one at a time, matched by sequence number;
//  - subscriptions: multicast notifications, with ENOBUFS turned into a `lost` call.
// Mixing them is what breaks the `netlink` package's socket ("Multipart message not
// terminated properly" when a notification lands inside a dump).
import { addon, type NativeNetlinkHandle, type NetlinkOpenOptions } from '../native/addon.js';
import {
  decodeError,
  parseDatagram,
  NLM_F_DUMP_INTR,
  NLM_F_MULTI,
  NLMSG_DONE,
  NLMSG_ERROR,
  type NetlinkMessage,
} from './codec.js';
import { NetlinkError, NetlinkTimeoutError } from './errors.js';

interface Pending {
  seq: number;
  what: string;
  onMessage: (msg: NetlinkMessage) => void;
  resolve: (result: { interrupted: boolean }) => void;
  reject: (err: Error) => void;
  interrupted: boolean;
  timer: NodeJS.Timeout;
}

function isErrnoError(err: unknown): err is Error & { errno: number; code: string; syscall: string } {
  return err instanceof Error && typeof (err as { errno?: unknown }).errno === 'number';
}

function wrapNative(err: unknown): Error {
  if (isErrnoError(err)) return new NetlinkError(err.errno, err.syscall, undefined, { cause: err });
  return err instanceof Error ? err : new Error(String(err));
}

/** A socket that carries one request at a time. */
export class RequestChannel {
  private readonly handle: NativeNetlinkHandle;
  private readonly port: number;
  private seq = Math.floor(Math.random() * 0x7fffffff);
  private pending: Pending | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly timeoutMs = 10_000) {
    this.handle = addon.netlinkOpen({ strictCheck: true, extAck: true, rcvbuf: 4 << 20 }, () => this.drain());
    this.port = addon.netlinkPortId(this.handle);
    addon.netlinkSetRef(this.handle, false);
  }

  /**
   * Sends the message built for the next sequence number and feeds every reply to
   * onMessage until the kernel ends the exchange (DONE, an ACK, or a lone reply).
   * Requests queue behind each other: one socket never has two exchanges open.
   */
  exchange(
    what: string,
    build: (seq: number, port: number) => Buffer,
    onMessage: (msg: NetlinkMessage) => void,
  ): Promise<{ interrupted: boolean }> {
    const run = () => this.start(what, build, onMessage);
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private start(
    what: string,
    build: (seq: number, port: number) => Buffer,
    onMessage: (msg: NetlinkMessage) => void,
  ): Promise<{ interrupted: boolean }> {
    if (this.closed) return Promise.reject(new NetlinkError(9, what));
    this.seq = (this.seq + 1) & 0x7fffffff || 1;
    const seq = this.seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.finish();
        reject(new NetlinkTimeoutError(`${what}: no answer from the kernel in ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending = { seq, what, onMessage, resolve, reject, interrupted: false, timer };
      addon.netlinkSetRef(this.handle, true);
      try {
        addon.netlinkSend(this.handle, build(seq, this.port));
      } catch (err) {
        this.finish();
        reject(wrapNative(err));
      }
    });
  }

  private finish(): Pending | undefined {
    const p = this.pending;
    if (p) clearTimeout(p.timer);
    this.pending = undefined;
    if (!this.closed) addon.netlinkSetRef(this.handle, false);
    return p;
  }

  private drain(): void {
    for (;;) {
      let datagram: Buffer | null;
      try {
        datagram = addon.netlinkRecv(this.handle);
      } catch (err) {
        this.finish()?.reject(wrapNative(err));
        continue;
      }
      if (datagram === null) return;
      for (const msg of parseDatagram(datagram)) this.handle_(msg);
    }
  }

  private handle_(msg: NetlinkMessage): void {
    const p = this.pending;
    // A reply to a request that already timed out: its sequence number is stale.
    if (!p || msg.seq !== p.seq) return;
    if (msg.flags & NLM_F_DUMP_INTR) p.interrupted = true;
    if (msg.type === NLMSG_ERROR) {
      const { errno, extAck } = decodeError(msg);
      this.finish();
      if (errno === 0) p.resolve({ interrupted: p.interrupted });
      else p.reject(new NetlinkError(errno, p.what, extAck));
      return;
    }
    if (msg.type === NLMSG_DONE) {
      // A dump's DONE carries an error code of its own (e.g. a strict-check rejection).
      const errno = msg.data.length >= 4 ? -msg.data.readInt32LE(0) : 0;
      this.finish();
      if (errno > 0) p.reject(new NetlinkError(errno, p.what, decodeError(msg).extAck));
      else p.resolve({ interrupted: p.interrupted });
      return;
    }
    try {
      p.onMessage(msg);
    } catch (err) {
      this.finish();
      p.reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (!(msg.flags & NLM_F_MULTI)) {
      this.finish();
      p.resolve({ interrupted: p.interrupted });
    }
  }

  close(): void {
    if (this.closed) return;
    const p = this.finish();
    this.closed = true;
    addon.netlinkClose(this.handle);
    p?.reject(new NetlinkError(9, `${p.what} (socket closed)`));
  }
}

/** A socket subscribed to multicast groups. */
export class SubscriptionChannel {
  private readonly handle: NativeNetlinkHandle;
  private closed = false;

  constructor(
    groups: number[],
    private readonly onMessage: (msg: NetlinkMessage) => void,
    private readonly onLost: (err: NetlinkError) => void,
    options: Pick<NetlinkOpenOptions, 'rcvbuf'> = {},
  ) {
    this.handle = addon.netlinkOpen({ groups, rcvbuf: options.rcvbuf ?? 1 << 20 }, () => this.drain());
  }

  private drain(): void {
    while (!this.closed) {
      let datagram: Buffer | null;
      try {
        datagram = addon.netlinkRecv(this.handle);
      } catch (err) {
        // ENOBUFS: the kernel dropped notifications, the socket is fine and reading goes
        // on. Anything else is reported the same way (the caller resyncs) and reading
        // stops until the socket is readable again, so a persistent error cannot spin.
        const wrapped = wrapNative(err);
        this.onLost(wrapped instanceof NetlinkError ? wrapped : new NetlinkError(5, 'recvmsg', wrapped.message));
        if (wrapped instanceof NetlinkError && wrapped.code === 'ENOBUFS') continue;
        return;
      }
      if (datagram === null) return;
      for (const msg of parseDatagram(datagram)) this.onMessage(msg);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    addon.netlinkClose(this.handle);
  }
}
