// One netlink socket and what travels over it. Two uses, never mixed on one socket:
//  - requests (dumps, writes): one at a time, matched by sequence number;
//  - subscriptions: multicast notifications, with ENOBUFS turned into a `lost` call.
// Mixing them is what breaks the `netlink` package's socket ("Multipart message not
// terminated properly" when a notification lands inside a dump).
//
// Guarantees, and the races they answer:
//  1. A reply whose sequence number is not the pending request's (the answer to a
//     request that already timed out) is dropped, never taken for the new one.
//  2. A dump's end is read right: NLMSG_DONE carries an int error, then ext-ack
//     attributes straight after it; NLMSG_ERROR carries the request's echo between
//     the two (codec.ts decodeDone / decodeError).
//  3. A datagram or message that does not parse fails the pending request (request
//     socket) or is reported as lost (subscription) with ERR_GWMODE_NETLINK_DECODE;
//     it never escapes into the poll callback, where it would crash the process.
//  4. A socket error never stops reading: the addon re-arms polling (point 5 of
//     native/src/netlink_socket.c) and drain() reads the error from recv(). ENOBUFS
//     on the subscription is `lost` and reading goes on; on the request socket it
//     fails the pending request, whose answer may be gone.
//  5. A request's answer is read right after its send: the kernel has usually queued
//     it by then; what it has not is read when the socket becomes readable.
import {
  decodeDone,
  decodeError,
  parseDatagram,
  NLM_F_DUMP_INTR,
  NLM_F_MULTI,
  NLMSG_DONE,
  NLMSG_ERROR,
  type NetlinkMessage,
} from './codec.js';
import { NetlinkDecodeError, NetlinkError, NetlinkTimeoutError } from './errors.js';
import type { NetlinkSocket, NetlinkTransport } from './transport.js';

const EBADF = 9;
const ENOBUFS = 105;

/** Messages of a reply not worth a message object (parseDatagram). */
type Skip = (type: number, datagram: Buffer, payload: number) => boolean;

interface Pending {
  seq: number;
  what: string;
  skip: Skip | undefined;
  onMessage: (msg: NetlinkMessage) => void;
  resolve: (result: { interrupted: boolean }) => void;
  reject: (err: Error) => void;
  interrupted: boolean;
  timer: NodeJS.Timeout;
}

function isErrnoError(err: unknown): err is Error & { errno: number; syscall: string } {
  return err instanceof Error && typeof (err as { errno?: unknown }).errno === 'number';
}

function toNetlinkError(err: unknown, what: string): NetlinkError {
  if (err instanceof NetlinkError) return err;
  if (isErrnoError(err)) return new NetlinkError(err.errno, err.syscall || what, undefined, { cause: err });
  return new NetlinkError(5, what, String(err), { cause: err });
}

function decodeFailure(what: string, err: unknown): NetlinkDecodeError {
  return new NetlinkDecodeError(
    `${what}: malformed netlink data: ${err instanceof Error ? err.message : String(err)}`,
    {
      cause: err,
    },
  );
}

/** A socket that carries one request at a time. */
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
    this.socket = transport.open({ strictCheck: true, extAck: true, rcvbuf: 4 << 20 }, (_status, rearm) =>
      this.onReadable(rearm),
    );
    this.socket.setRef(false);
  }

  /**
   * Sends the message built for the next sequence number and feeds every reply to
   * onMessage until the kernel ends the exchange (DONE, an ACK or error, or a lone
   * reply). Requests queue behind each other: one socket never has two open.
   */
  exchange(
    what: string,
    build: (seq: number, port: number) => Buffer,
    onMessage: (msg: NetlinkMessage) => void,
    skip?: Skip,
  ): Promise<{ interrupted: boolean }> {
    const run = () => this.start(what, build, onMessage, skip);
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  private start(
    what: string,
    build: (seq: number, port: number) => Buffer,
    onMessage: (msg: NetlinkMessage) => void,
    skip: Skip | undefined,
  ): Promise<{ interrupted: boolean }> {
    if (this.closed) return Promise.reject(new NetlinkError(EBADF, what));
    if (this.broken) return Promise.reject(this.broken);
    this.seq = (this.seq + 1) & 0x7fffffff || 1;
    const seq = this.seq;
    return new Promise((resolve, reject) => {
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
        reject(toNetlinkError(err, `${what} (sendto)`));
        return;
      }
      // Guarantee 5: the kernel answers most requests inside the send (an ACK, a dump's
      // first datagram, and the next ones inside each read): read them now, not one turn
      // of the event loop later.
      this.drain();
    });
  }

  private finish(): Pending | undefined {
    const p = this.pending;
    if (p) clearTimeout(p.timer);
    this.pending = undefined;
    if (!this.closed) this.socket.setRef(false);
    return p;
  }

  private onReadable(rearm: number): void {
    if (rearm < 0) {
      this.broken = new NetlinkError(-rearm, 'uv_poll_start (request socket)');
      this.finish()?.reject(this.broken);
    }
    this.drain();
  }

  private drain(): void {
    while (!this.closed) {
      let datagram: Buffer | null;
      try {
        datagram = this.socket.recv();
      } catch (err) {
        const e = toNetlinkError(err, 'recvmsg');
        this.finish()?.reject(e);
        // ENOBUFS is cleared by the read that reported it; anything else may not be.
        if (e.errno === ENOBUFS) continue;
        return;
      }
      if (datagram === null) return;
      let messages: NetlinkMessage[];
      try {
        messages = parseDatagram(datagram, this.pending?.skip);
      } catch (err) {
        const p = this.finish();
        p?.reject(decodeFailure(p.what, err));
        continue;
      }
      for (const msg of messages) this.handle(msg);
    }
  }

  private handle(msg: NetlinkMessage): void {
    const p = this.pending;
    if (!p || msg.seq !== p.seq) return;
    if (msg.flags & NLM_F_DUMP_INTR) p.interrupted = true;
    try {
      if (msg.type === NLMSG_ERROR || msg.type === NLMSG_DONE) {
        const { errno, extAck } = msg.type === NLMSG_ERROR ? decodeError(msg) : decodeDone(msg);
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
    if (!(msg.flags & NLM_F_MULTI)) {
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

export interface SubscriptionHandlers {
  onMessage: (msg: NetlinkMessage) => void;
  /** Notifications were dropped (ENOBUFS), or could not be read or parsed: resync. */
  onLost: (err: Error) => void;
}

/** A socket subscribed to multicast groups. */
export class SubscriptionChannel {
  private readonly socket: NetlinkSocket;
  private closed = false;

  constructor(
    transport: NetlinkTransport,
    groups: { required: number[]; optional: number[] },
    private readonly handlers: SubscriptionHandlers,
    rcvbuf = 1 << 20,
  ) {
    this.socket = transport.open(
      { groups: groups.required, optionalGroups: groups.optional, rcvbuf },
      (_status, rearm) => {
        if (rearm < 0) this.handlers.onLost(new NetlinkError(-rearm, 'uv_poll_start (subscription socket)'));
        this.drain();
      },
    );
  }

  private drain(): void {
    while (!this.closed) {
      let datagram: Buffer | null;
      try {
        datagram = this.socket.recv();
      } catch (err) {
        const e = toNetlinkError(err, 'recvmsg');
        this.handlers.onLost(e);
        // ENOBUFS is cleared by the read that reported it; anything else may not be,
        // and reading resumes when the socket is readable again.
        if (e.errno === ENOBUFS) continue;
        return;
      }
      if (datagram === null) return;
      let messages: NetlinkMessage[];
      try {
        messages = parseDatagram(datagram);
      } catch (err) {
        this.handlers.onLost(decodeFailure('notification', err));
        continue;
      }
      for (const msg of messages) this.handlers.onMessage(msg);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.close();
  }
}
