// When ovnkube-node may be restarted. Pure: times are passed in (ms since epoch).

export const HOUR_MS = 3_600_000;

export interface RateLimit {
  minIntervalMs: number;
  maxPerHour: number;
}

/** Whether a restart may be requested now, given the times of earlier ones. */
export function restartAllowed(
  history: number[],
  now: number,
  limit: RateLimit,
): { allowed: true } | { allowed: false; nextAllowedAt: number; reason: string } {
  const last = Math.max(-Infinity, ...history);
  if (now - last < limit.minIntervalMs) {
    return {
      allowed: false,
      nextAllowedAt: last + limit.minIntervalMs,
      reason: `the last restart was less than ${Math.round(limit.minIntervalMs / 1000)}s ago`,
    };
  }
  const lastHour = history.filter((t) => now - t < HOUR_MS);
  if (lastHour.length >= limit.maxPerHour) {
    return {
      allowed: false,
      nextAllowedAt: Math.min(...lastHour) + HOUR_MS,
      reason: `${lastHour.length} restarts in the last hour (at most ${limit.maxPerHour})`,
    };
  }
  return { allowed: true };
}
