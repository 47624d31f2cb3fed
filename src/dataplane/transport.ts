// The seam under the dataplane: one netlink socket, datagrams in and out, exactly
// what the native addon offers. Everything above it (sequence matching, DONE and
// error decoding, dump retries, ENOBUFS handling, the prefix filter) is ours and runs
// unchanged over a fake: tests put a scripted fake kernel here
// (test/helpers/fake-transport.ts) and inject faults per call, Felix-style.
//
// Why the seam is the socket and not an exchange()-level call: the faults worth
// injecting (a stale sequence number, a truncated datagram, NLM_F_DUMP_INTR, an error
// in a dump's DONE, ENOBUFS) are all handled by the channel code above the socket; a
// fake above the channels would have to re-implement that code instead of testing it.
import { addon, type NetlinkOpenOptions } from '../native/addon.js';

export type { NetlinkOpenOptions };

export interface NetlinkSocket {
  /** The port id the kernel assigned at bind. */
  readonly portId: number;
  /** Sends one datagram to the kernel; throws an errno-shaped Error. */
  send(datagram: Buffer): void;
  /**
   * One whole datagram, or null when none is queued; throws an errno-shaped Error (ENOBUFS).
   * It may share its memory with the next datagram: read it before the next recv().
   */
  recv(): Buffer | null;
  /** Whether the socket keeps the process alive. */
  setRef(ref: boolean): void;
  /** Idempotent. */
  close(): void;
}

export interface NetlinkTransport {
  /** onReadable(status, rearm): see NativeAddon.netlinkOpen. */
  open(options: NetlinkOpenOptions, onReadable: (status: number, rearm: number) => void): NetlinkSocket;
}

/** The real kernel, through the native addon. */
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
    // One buffer per socket, reused by every read (native/src/netlink_socket.c, point 7).
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
