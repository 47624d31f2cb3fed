// The one clock, with two faces. Every duration and deadline is on `now()`, CLOCK_MONOTONIC
// (process.hrtime, counted from boot, so a time the journal keeps with the boot id means the same
// to the next agent; it stops while suspended, erring on the side of the rate limit): a wall clock
// stepped back by days put every deadline in the future. `wall()` is for what people read, file times.
export interface Clock {
  now(): number;
  wall(): number;
}

export const systemClock: Clock = { now: () => Number(process.hrtime.bigint() / 1_000_000n), wall: () => Date.now() };

/** The longest delay setTimeout honours: Node fires a longer one after 1 ms (TimeoutOverflowWarning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A delay within [0, MAX_TIMER_MS], never Node's 1 ms (a busy loop); NaN (a bug upstream) is the longest: a stall the resync ends. */
export function timerDelay(ms: number): number {
  if (Number.isNaN(ms)) return MAX_TIMER_MS;
  return Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(ms)));
}

/** setTimeout with the delay clamped: every timer of the agent and the supervisor goes through it. */
export function after(ms: number, fn: () => void): NodeJS.Timeout {
  return setTimeout(fn, timerDelay(ms));
}

/** setInterval with the period clamped likewise, and at least 1 ms. */
export function every(ms: number, fn: () => void): NodeJS.Timeout {
  return setInterval(fn, Math.max(1, timerDelay(ms)));
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds of a duration flag: plain seconds ("60") or with a unit ("500ms", "2m"), at most what a timer can wait. */
export function parseDuration(text: string | number): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(String(text));
  if (!m) throw new Error(`"${text}" is not a duration (plain seconds, or a number with ms, s, m or h)`);
  const ms = Math.round(Number(m[1]) * (UNITS[m[2] ?? 's'] ?? 1000));
  if (ms > MAX_TIMER_MS) throw new Error(`"${text}" is too long (at most 24 days)`);
  return ms;
}
