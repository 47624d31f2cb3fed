// Durations on the command line: plain seconds ("60") or with a unit ("500ms", "2m").
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds, or throws with a message naming what was wrong. */
export function parseDuration(text: string | number): number {
  if (typeof text === 'number') {
    if (!Number.isFinite(text) || text < 0) throw new Error(`"${text}" is not a duration`);
    return text * 1000;
  }
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!m) throw new Error(`"${text}" is not a duration (plain seconds, or a number with ms, s, m or h)`);
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 's']!);
}
