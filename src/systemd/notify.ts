// The sd_notify protocol: newline-separated KEY=VALUE assignments in one datagram to
// $NOTIFY_SOCKET. Nothing is sent when the variable is unset (not under systemd).
import { addon } from '../native/addon.js';

export type NotifyFields = Partial<
  Record<'READY' | 'STATUS' | 'WATCHDOG' | 'STOPPING' | 'RELOADING' | 'MONOTONIC_USEC' | 'ERRNO', string>
>;

export interface Notifier {
  /** Whether a notify socket is configured at all. */
  readonly enabled: boolean;
  /** Sends one datagram; throws errors with errno and code. */
  notify(fields: NotifyFields): void;
}

export function formatNotify(fields: NotifyFields): string {
  // A STATUS= line may not hold a newline: it would start another assignment.
  return Object.entries(fields)
    .map(([k, v]) => `${k}=${String(v).replace(/\n/g, ' ')}`)
    .join('\n');
}

export function systemdNotifier(env: NodeJS.ProcessEnv = process.env): Notifier {
  const socket = env.NOTIFY_SOCKET;
  return {
    enabled: Boolean(socket),
    notify(fields) {
      if (socket) addon.sdNotify(socket, formatNotify(fields));
    },
  };
}

/** CLOCK_MONOTONIC in microseconds: libuv's hrtime reads the same clock systemd compares with. */
export const monotonicUsec = (): string => (process.hrtime.bigint() / 1000n).toString();

/**
 * The watchdog period from WATCHDOG_USEC, or undefined when no watchdog applies to us
 * (unset, or WATCHDOG_PID names another process, e.g. a wrapper's child).
 */
export function watchdogUsec(env: NodeJS.ProcessEnv = process.env, pid = process.pid): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isInteger(usec) || usec <= 0) return undefined;
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return undefined;
  return usec;
}
