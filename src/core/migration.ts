// A migration as the journal records it, and what a restart strategy finds: the
// values the decision (decide.ts) reasons about.
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

export interface Migration {
  /** The desired mode the routes were moved to. */
  mode: GatewayMode;
  startedAt: number;
  /** The ovnkube-node running when the migration began; its successor is the proof. */
  ovnkubeBefore: string | null;
  /** What was replaced, to report it and to put it back. */
  routes: Array<{ key: RouteKey; from: NextHop; to: NextHop }>;
  /** `none`: the node reached this mode without a migration by the agent, so no restart is owed. */
  restart: 'owed' | 'requested' | 'failed' | 'done' | 'none';
  /** What ovnkubeBefore and stopped identify: a CRI container, or a process (signal, none). */
  identity: IdentityKind;
  attempts: number;
  lastAttemptAt: number | null;
  lastError: string | null;
  /** The ovnkube-node the agent stopped last: its id, and how it reads. */
  stopped: string | null;
  stoppedAs: string | null;
  /** How the last request went: null while it is under way (or the agent died in it). */
  outcome: 'stopped' | 'failed' | null;
  doneAt: number | null;
  /**
   * A `rollback --yes` of this migration: journaled before its first put-back, done once
   * all were put back and verified. The routes stay on record whatever it says: a
   * rollback run again skips those already put back, and finds again any moved since.
   */
  rollback?: { startedAt: number; doneAt: number | null } | null;
}
