// The decision's values: what decide (decide.ts) reads, and the records and steps it
// returns for the loop to carry out (src/agent/steps.ts is the only place they happen).
import type { Migration, RestartTarget, TargetLookup } from './migration.js';
import type { Reason } from './reasons.js';
import type { GatewayMode, OvnkubeObservation, Phase, Plan, ReplaceAction } from './types.js';
import type { RateLimit } from './rate-limit.js';

export interface RestartSettings {
  strategy: 'cri' | 'signal' | 'none';
  limit: RateLimit;
  timeoutMs: number;
  settleMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Whether the new ovnkube-node's mode can be checked (--ovnkube-mode-check proc). */
  modeChecked: boolean;
}

export interface DecideInput {
  plan: Plan;
  desired: GatewayMode | null;
  migration: Migration | null;
  /** Times of earlier restart requests (rate limit). */
  restarts: number[];
  ovnkube: OvnkubeObservation;
  /** What the restart strategy sees; null when it was not asked (see needsTarget). */
  target: TargetLookup | null;
  settings: RestartSettings;
  /** Monotonic ms, like every time of the migration and the restarts. */
  now: number;
  /** Wall minus monotonic time (ms): only to show a time in a message; 0 when not given. */
  wallOffsetMs?: number;
  /**
   * A restart request is still under way (a CRI stop waits out ovnkube-node's grace
   * period): no other is requested until it is answered, and the answer wakes a pass.
   */
  restartInFlight?: boolean;
  /** How the last restart request went, heard since the last decision: recorded first (core/answer.ts). */
  answer?: RestartAnswer | null;
  /** The journal lags behind what was carried out (a save failed): the decision writes it again first. */
  journalLags?: boolean;
}

/** A restart request's answer as the restart runner heard it (src/agent/restart-runner.ts). */
export interface RestartAnswer {
  step: RestartStep;
  /** null: ovnkube-node was stopped; else the runtime's refusal (code: a bounded label, recorder.ts). */
  error: { message: string; code: string } | null;
}

export type Step =
  | { kind: 'journal'; migration: Migration }
  | { kind: 'replace'; action: ReplaceAction }
  | { kind: 'restart'; target: RestartTarget; migration: Migration };

export interface RestartView {
  phase: Phase | null;
  reason: Reason | null;
  /** What failed on the restart path, in words: the status's lastError when the pass itself did not fail. */
  error?: string;
}

export type RestartStep = Extract<Step, { kind: 'restart' }>;

/**
 * What already happened, put on record before the decision's steps: the journal's
 * catch-up (a save that failed after a change, written again), a restart request's
 * answer (the event, and the migration's record when the answer is the migration's), and
 * the migration moved on by someone else (a new ovnkube-node seen, the node at the
 * desired mode by itself), written after the fact; and the restart's completion told.
 */
export type RecordStep =
  | { kind: 'catch-up' }
  | {
      kind: 'answered';
      mode: GatewayMode;
      target: string;
      result: 'stopped' | 'failed';
      code: string | null;
      error: string | null;
    }
  | { kind: 'record'; migration: Migration | null; what: string }
  | { kind: 'completed'; mode: GatewayMode };

/** Everything a round does, as a value: the loop carries out its records, then its steps, and nothing else. */
export interface Decision {
  records: RecordStep[];
  steps: Step[];
  /** The migration on record once the steps are done. */
  migration: Migration | null;
  restart: RestartView;
  wakeInMs: number | undefined;
  /** --dry-run: the plan's replaces are shown, and neither they nor a restart are carried out. */
  dryRun: boolean;
  /** The plan waits on ovnkube-node (its rollout, its start): the decision looks again every second. */
  waiting: boolean;
}
