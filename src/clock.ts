// The one clock, with two faces. Durations and deadlines (the settle window, the restart
// timeout, the rate limit, the fight window, backoff, the watchdog's stuck threshold) are
// measured on `now()`, a monotonic clock that NTP never steps; `wall()` is only for what
// people read (status timestamps, log and event times, file names) and for comparing with
// file-system times. A wall clock stepped back by days made every deadline lie in the
// future (and the timers spin, see `after`), one stepped forward cut the settle window short.
//
// `now()` is CLOCK_MONOTONIC (process.hrtime), not performance.now(): it is system-wide and
// counts from boot, so a value the journal keeps means the same to the next agent on the
// same boot (the journal stores it with the boot id, src/restart/journal-time.ts), and it is
// the clock systemd's watchdog and MONOTONIC_USEC use. It stops while the machine is
// suspended (CLOCK_BOOTTIME would not): a node suspended mid-migration waits the longer,
// which errs on the side of the rate limit. Timers are the platform's (setTimeout), which
// tests replace with node:test's mock timers; a test passes a fake clock.
export interface Clock {
  /** Monotonic milliseconds (since boot): for every duration and deadline. */
  now(): number;
  /** Milliseconds since the epoch: only for what is shown to people or compared with file times. */
  wall(): number;
}

export const systemClock: Clock = {
  now: () => Number(process.hrtime.bigint() / 1_000_000n),
  wall: () => Date.now(),
};

/** The longest delay setTimeout honours: Node fires a longer one after 1 ms (TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A computed delay as setTimeout must get it: within [0, MAX_TIMER_MS]. A deadline far in
 * the future (a clock stepped, a huge setting) waits the longest a timer can, and is looked
 * at again then; it never becomes Node's 1 ms, which turned a wake-up into a busy loop.
 * NaN (a bug upstream) is the longest too: a stall the periodic resync ends, never a spin.
 */
export function timerDelay(ms: number): number {
  if (Number.isNaN(ms)) return MAX_TIMER_MS;
  return Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(ms)));
}

/** setTimeout with the delay clamped (timerDelay): every timer of the agent and the supervisor goes through it. */
export function after(ms: number, fn: () => void): NodeJS.Timeout {
  return setTimeout(fn, timerDelay(ms));
}

/** setInterval with the period clamped likewise, and at least 1 ms. */
export function every(ms: number, fn: () => void): NodeJS.Timeout {
  return setInterval(fn, Math.max(1, timerDelay(ms)));
}
