// When ovnkube-node may be restarted, and when the agent must stop repairing a route
// because something keeps putting it back. Pure: times are passed in (ms since epoch).

export const HOUR_MS = 3_600_000;

export interface RateLimit {
  minIntervalMs: number;
  maxPerHour: number;
}

/** Whether a restart may be requested now, given the times of earlier ones. */
export function restartAllowed(history: number[], now: number, limit: RateLimit): { allowed: true } | { allowed: false; nextAllowedAt: number; reason: string } {
  const last = Math.max(-Infinity, ...history);
  if (now - last < limit.minIntervalMs) {
    return { allowed: false, nextAllowedAt: last + limit.minIntervalMs, reason: `the last restart was less than ${Math.round(limit.minIntervalMs / 1000)}s ago` };
  }
  const lastHour = history.filter((t) => now - t < HOUR_MS).sort((a, b) => a - b);
  if (lastHour.length >= limit.maxPerHour) {
    return { allowed: false, nextAllowedAt: lastHour[0]! + HOUR_MS, reason: `${lastHour.length} restarts in the last hour (at most ${limit.maxPerHour})` };
  }
  return { allowed: true };
}

export const FIGHT_WINDOW_MS = 10 * 60_000;
/** More than this many set-backs within the window, and the agent stops repairing. */
export const FIGHT_LIMIT = 2;

/**
 * Counts, per CIDR, how often a route the agent replaced was set back to another
 * shape within FIGHT_WINDOW_MS of the agent's replace. Two agents (or an agent and
 * ovnkube-node) fighting over a route is worse than a stale route: past the limit
 * the CIDR is suspended, with a reason naming what keeps coming back.
 */
export class FightTracker {
  private readonly lastApplied = new Map<string, { shape: string; at: number }>();
  private readonly setBacks = new Map<string, number[]>();
  private readonly suspended = new Map<string, string>();

  /** Called before the agent replaces cidr, seeing `observed`; returns true when cidr is now suspended. */
  beforeReplace(cidr: string, observed: string, now: number, hint: string): boolean {
    if (this.suspended.has(cidr)) return true;
    const last = this.lastApplied.get(cidr);
    if (last && now - last.at <= FIGHT_WINDOW_MS && last.shape !== observed) {
      const times = [...(this.setBacks.get(cidr) ?? []), now].filter((t) => now - t <= FIGHT_WINDOW_MS);
      this.setBacks.set(cidr, times);
      if (times.length > FIGHT_LIMIT) {
        this.suspended.set(
          cidr,
          `route set back to ${observed} ${times.length} times in ${FIGHT_WINDOW_MS / 60_000} min: ${hint}; repairs of ${cidr} suspended`,
        );
        return true;
      }
    }
    return false;
  }

  applied(cidr: string, shape: string, now: number): void {
    this.lastApplied.set(cidr, { shape, at: now });
  }

  /** Whatever changed (desired mode, ovnkube-node): start counting afresh. */
  reset(): void {
    this.lastApplied.clear();
    this.setBacks.clear();
    this.suspended.clear();
  }

  /** The route is right again by someone else's hand: nothing to hold against it. */
  clear(cidr: string): void {
    this.suspended.delete(cidr);
    this.setBacks.delete(cidr);
  }

  suspensions(): Map<string, string> {
    return new Map(this.suspended);
  }
}
