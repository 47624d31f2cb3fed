// Durations on the command line: plain seconds ("60") or with a unit ("500ms", "2m").
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * The longest a timer can wait: Node fires a longer setTimeout after 1 ms instead
 * (TimeoutOverflowWarning), which would turn a huge --resync-interval into a busy loop.
 */
export const MAX_DURATION_MS = 2 ** 31 - 1;

/** Milliseconds, or throws with a message naming what was wrong. */
export function parseDuration(text: string | number): number {
  let ms: number;
  if (typeof text === 'number') {
    if (!Number.isFinite(text) || text < 0) throw new Error(`"${text}" is not a duration`);
    ms = text * 1000;
  } else {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
    const unit = m ? UNITS[m[2] ?? 's'] : undefined;
    if (!m || unit === undefined)
      throw new Error(`"${text}" is not a duration (plain seconds, or a number with ms, s, m or h)`);
    ms = Math.round(Number(m[1]) * unit);
  }
  if (ms > MAX_DURATION_MS) throw new Error(`"${text}" is too long (at most 24 days)`);
  return ms;
}
