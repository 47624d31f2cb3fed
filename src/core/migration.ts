// A migration and the restart it owes, as one state machine: the states (a union on `restart`), the
// events, and the one pure transition. The journal (src/restart/journal.ts) stores the state; every
// command reads and writes it through the journal keeper.
//
//   (none) --begun--> owed --requested--> requested --answered(ok)--> requested (stopped)
//                      ^                    |  ^ requested (the same one still runs, rule 8)
//                      |                    |  `--answered(error)--> failed --requested--> ...
//   any --recounted--> (same state, counted from what runs now)
//   owed | requested | failed --restarted (a new ovnkube-node runs the mode)--> done
//   any --reached (the node got to the desired mode by itself)--> none (a rollback under way: its record, none)
//   any --rollback-begun--> (same state, rollback under way) --rolled-back--> (rollback done)
// The rollback mark beside the restart state, and what it keeps: docs/design.md and decide.ts, rule 1.
import type { NextHop, RouteKey } from './route.js';
import type { GatewayMode } from './types.js';

export interface RestartTarget {
  /** Container id, or "pid N start T": what tells this ovnkube-node from the next. */
  id: string;
  describe: string;
}

/** The one running ovnkube-node, or why there is not exactly one. */
export type TargetLookup = { target: RestartTarget } | { error: string };

export type IdentityKind = 'container' | 'process';

/** A restart request: when, of which ovnkube-node, and its answer (null while under way). */
interface Attempt {
  at: number;
  target: RestartTarget;
  result: 'stopped' | 'failed' | null;
  error: string | null;
}

interface Common {
  /** The desired mode the routes were moved to. */
  mode: GatewayMode;
  startedAt: number;
  /** What was replaced, to report it and to put it back. */
  routes: Array<{ key: RouteKey; from: NextHop; to: NextHop }>;
  /** What kind of id ovnkubeBefore and the attempts' targets are: a CRI container, or a process. */
  identity: IdentityKind;
  /** The ovnkube-node running when the migration began; its successor is the proof. */
  ovnkubeBefore: string | null;
  attempts: number;
  /** The last restart request, kept whatever came after it (the status shows it). */
  last: Attempt | null;
  /** A `rollback --yes`: journaled before its first put-back, done once all were put back and verified. */
  rollback: { startedAt: number; doneAt: number | null } | null;
}

export type Migration = Common &
  (
    | { restart: 'none' } // the node reached a mode without the agent (the other, under a rollback): no restart owed
    | { restart: 'owed' }
    | { restart: 'requested'; last: Attempt }
    | { restart: 'failed'; last: Attempt & { error: string } }
    | { restart: 'done'; doneAt: number }
  );

type MigrationEvent =
  | { kind: 'begun'; mode: GatewayMode; routes: Common['routes']; identity: IdentityKind; ovnkube: string | null }
  | { kind: 'reached'; mode: GatewayMode; identity: IdentityKind }
  | { kind: 'recounted'; identity: IdentityKind; ovnkube: string | null }
  | { kind: 'requested'; target: RestartTarget }
  | { kind: 'answered'; error: string | null }
  | { kind: 'restarted' }
  | { kind: 'rollback-begun' }
  | { kind: 'rolled-back' };

/** The restart still to be made: not made yet, under way, or failed. */
export const restartOwed = (m: Migration): boolean =>
  m.restart === 'owed' || m.restart === 'requested' || m.restart === 'failed';

/** A rollback begun and not finished. */
export const rollingBack = (m: Migration | null): boolean => m?.rollback != null && m.rollback.doneAt === null;

/** The state after `e` at `now`; an event that does not apply to the state leaves it as it is. */
export function transition(
  m: Migration | null,
  e: Extract<MigrationEvent, { kind: 'begun' | 'reached' }>,
  now: number,
): Migration;
export function transition(m: Migration, e: MigrationEvent, now: number): Migration;
export function transition(m: Migration | null, e: MigrationEvent, now: number): Migration | null {
  // A rollback under way keeps its routes and mark, and owes nothing more: ovnkube-node ran the
  // other mode, so the next move of its routes is a new migration (src/core/decide.ts, rule 1).
  if (e.kind === 'reached' && m !== null && rollingBack(m)) {
    if (m.restart === 'none') return m;
    const { doneAt: _, ...rest } = m as Migration & { doneAt?: number };
    return { ...rest, restart: 'none' };
  }
  if (e.kind === 'begun' || e.kind === 'reached') {
    const fresh = { mode: e.mode, startedAt: now, attempts: 0, last: null, rollback: null, identity: e.identity };
    if (e.kind === 'begun') return { ...fresh, routes: e.routes, ovnkubeBefore: e.ovnkube, restart: 'owed' };
    return { ...fresh, routes: [], ovnkubeBefore: null, restart: 'none' };
  }
  if (m === null) return null;
  switch (e.kind) {
    case 'recounted':
      // --restart changed between agents: a container id and a process identity cannot be compared.
      return { ...m, identity: e.identity, ovnkubeBefore: e.ovnkube };
    case 'requested': {
      const last = { at: now, target: e.target, result: null, error: null };
      return restartOwed(m) ? { ...m, restart: 'requested', attempts: m.attempts + 1, last } : m;
    }
    case 'answered':
      if (m.last === null) return m;
      if (e.error === null) return m.restart === 'failed' ? m : { ...m, last: { ...m.last, result: 'stopped' } };
      // A failure after a new ovnkube-node was already seen (done) is moot.
      if (m.restart !== 'requested') return m;
      return { ...m, restart: 'failed', last: { ...m.last, result: 'failed', error: e.error } };
    case 'restarted':
      return restartOwed(m) ? { ...m, restart: 'done', doneAt: now } : m;
    case 'rollback-begun':
      return { ...m, rollback: { startedAt: now, doneAt: null } };
    case 'rolled-back':
      return m.rollback ? { ...m, rollback: { ...m.rollback, doneAt: now } } : m;
  }
}

/** Every time of the record through `f` (src/restart/journal-time.ts). */
export function mapTimes(m: Migration, f: (t: number) => number): Migration {
  const last = m.last && { ...m.last, at: f(m.last.at) };
  const r = m.rollback;
  const rollback = r && { startedAt: f(r.startedAt), doneAt: r.doneAt === null ? null : f(r.doneAt) };
  const moved = { ...m, startedAt: f(m.startedAt), last, rollback } as Migration;
  return moved.restart === 'done' ? { ...moved, doneAt: f(moved.doneAt) } : moved;
}
