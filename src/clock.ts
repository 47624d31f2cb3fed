// The one clock: milliseconds since the epoch. The loop, the restart decisions and the
// systemd supervisor read time only through it; timers are the platform's
// (setTimeout), which tests replace with node:test's mock timers.
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
