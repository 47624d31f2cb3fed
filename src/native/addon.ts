// The only module that loads the native addon (native/: a netlink socket, sd_notify, flock), so
// that a missing or stale build is one clear error, not a stack trace in the middle of the agent.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export interface NativeNetlinkHandle {
  readonly __brand: 'NativeNetlinkHandle';
}

export interface NetlinkOpenOptions {
  protocol?: number;
  groups?: number[];
  /** Groups joined when the kernel knows them, skipped (EINVAL) when it does not. */
  optionalGroups?: number[];
  rcvbuf?: number;
  strictCheck?: boolean;
  extAck?: boolean;
}

export interface NativeAddon {
  /**
   * onReadable(status, rearm): status is libuv's (negative after a socket error, e.g. an overflow);
   * rearm is 0, or libuv's error when polling could not start again (native/src/netlink_socket.c, point 5).
   */
  netlinkOpen(options: NetlinkOpenOptions, onReadable: (status: number, rearm: number) => void): NativeNetlinkHandle;
  netlinkSend(handle: NativeNetlinkHandle, data: Buffer): number;
  /**
   * Reads one whole datagram into `into`: its length; null when nothing is queued; -size (nothing
   * read) when it needs a larger buffer. Throws ENOBUFS after an overflow. A buffer of 32 KiB or
   * more gets dump replies of 32 KiB.
   */
  netlinkRecv(handle: NativeNetlinkHandle, into: Buffer): number | null;
  netlinkPortId(handle: NativeNetlinkHandle): number;
  netlinkSetRef(handle: NativeNetlinkHandle, ref: boolean): void;
  netlinkClose(handle: NativeNetlinkHandle): void;
  /** Sends one datagram to an AF_UNIX socket path, or an abstract name written '@name'. */
  sdNotify(socketPath: string, message: string): number;
  /**
   * Opens (creating it 0640) and flocks path exclusively without waiting; the fd is close-on-exec
   * and the lock lasts while it is open. Throws EAGAIN when another open file holds the lock, ELOOP
   * for a symlink. On a read-only file system an existing file is opened read-only (readOnly: true).
   */
  lockFile(path: string): { fd: number; readOnly: boolean };
}

// From dist/src/native to the repository's root.
const addonPath = fileURLToPath(new URL('../../../native/build/Release/gwmode_native.node', import.meta.url));

function load(): NativeAddon {
  try {
    return createRequire(import.meta.url)(addonPath) as NativeAddon;
  } catch (cause) {
    throw Object.assign(
      new Error(`cannot load the native addon at ${addonPath}: run "npm ci" (or "npm run build") first`, { cause }),
      { code: 'ERR_GWMODE_NATIVE_MISSING' },
    );
  }
}

export const addon: NativeAddon = load();
