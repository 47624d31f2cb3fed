// Never fight: when something keeps setting a service route back (an ovnkube-node that really runs
// the other mode, a second agent), a stale route is the lesser harm. Pure: state in, state out.
//  1. A set-back: a route found with another next hop than the agent last gave it, within
//     FIGHT_WINDOW_MS of that replace; counted once (the replace it contradicts is forgotten).
//  2. More than FIGHT_LIMIT set-backs within the window suspend the CIDR's repairs; the planner then
//     holds every CIDR back (no half-done dual-stack).
//  3. A suspended route found as the agent wanted it (someone put it right) lifts the suspension.
//  4. Another situation (desired mode, ovnkube-node) forgives. What the agent last gave each CIDR is
//     kept while the desired mode is the same: a migration's restart brings a new ovnkube-node right
//     after the replace, and its set-back is the first of a fight (else one repair too many).
//  5. The agent's own put-back (a replace refused in the other family) counts too, noted
//     (recordApplied): else each retry would flap that family's traffic for ever.
import { renderNextHop, sameNextHop, type NextHop } from './route.js';
import type { GatewayMode, ReplaceAction } from './types.js';

export const FIGHT_WINDOW_MS = 10 * 60_000;
/** More than this many set-backs within the window, and the agent stops repairing. */
export const FIGHT_LIMIT = 2;

/** What the set-backs are counted against (point 4). */
interface Situation {
  desiredMode: GatewayMode | null;
  /** ovnkube-node's identity ("pid N start T"); null: not one process. */
  ovnkube: string | null;
}

export interface FightState {
  /** The situation when counting began; null before the first observation. */
  situation: Situation | null;
  lastApplied: ReadonlyMap<string, { nextHop: NextHop; at: number; note?: string }>;
  setBacks: ReadonlyMap<string, number[]>;
  suspended: ReadonlyMap<string, { why: string; wanted: NextHop }>;
}

export const NO_FIGHTS: FightState = {
  situation: null,
  lastApplied: new Map(),
  setBacks: new Map(),
  suspended: new Map(),
};

interface FightObservation {
  situation: Situation;
  /** The next hop observed for each service CIDR with exactly one route. */
  observed: ReadonlyMap<string, NextHop>;
  now: number;
  /** What to suggest when repairs are suspended. */
  hint: string;
}

export function trackFights(state: FightState, o: FightObservation): FightState {
  const was = state.situation;
  if (was !== null && (was.desiredMode !== o.situation.desiredMode || was.ovnkube !== o.situation.ovnkube)) {
    // Point 4: forgiven, and the set-backs counted again from this observation on.
    const lastApplied = was.desiredMode === o.situation.desiredMode ? state.lastApplied : new Map();
    state = { ...NO_FIGHTS, situation: o.situation, lastApplied };
  }
  const lastApplied = new Map(state.lastApplied);
  const setBacks = new Map(state.setBacks);
  const suspended = new Map(state.suspended);
  for (const [cidr, held] of state.suspended) {
    const seen = o.observed.get(cidr);
    if (seen && sameNextHop(seen, held.wanted)) {
      suspended.delete(cidr);
      setBacks.delete(cidr);
    }
  }
  for (const [cidr, applied] of state.lastApplied) {
    const seen = o.observed.get(cidr);
    const expired = o.now - applied.at > FIGHT_WINDOW_MS;
    if (expired || (seen && !sameNextHop(seen, applied.nextHop))) lastApplied.delete(cidr);
    if (expired || !seen || sameNextHop(seen, applied.nextHop)) continue;
    const times = [...(setBacks.get(cidr) ?? []), o.now].filter((t) => o.now - t <= FIGHT_WINDOW_MS);
    setBacks.set(cidr, times);
    if (times.length > FIGHT_LIMIT) {
      const why = `route set back to ${renderNextHop(seen)} ${times.length} times in ${FIGHT_WINDOW_MS / 60_000} min: ${applied.note ?? o.hint}; repairs of ${cidr} suspended`;
      suspended.set(cidr, { why, wanted: applied.nextHop });
    }
  }
  return { situation: o.situation, lastApplied, setBacks, suspended };
}

/** After replaces: what each CIDR was given, and when; `note`: put back by the agent itself (point 5), and why. */
export function recordApplied(state: FightState, actions: ReplaceAction[], now: number, note?: string): FightState {
  const lastApplied = new Map(state.lastApplied);
  for (const a of actions)
    lastApplied.set(a.key.prefix, { nextHop: a.to, at: now, ...(note !== undefined ? { note } : {}) });
  return { ...state, lastApplied };
}

export function suspensionsOf(state: FightState): Map<string, string> {
  return new Map([...state.suspended].map(([cidr, s]) => [cidr, s.why]));
}
