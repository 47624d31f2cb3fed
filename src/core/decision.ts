// The decision's values: what decide.ts reads, and returns for src/agent/execute.ts to carry out.
import type { Migration, RestartTarget, TargetLookup } from './migration.js';
import type { Reason } from './reasons.js';
import type { GatewayMode, OvnkubeObservation, Phase, Plan, ReplaceAction } from './types.js';

export const POLL_MS = 1000;
/** Right after a restart request the successor usually comes within a moment: look closely. */
export const QUICK_POLL_MS = 100;
export const QUICK_FOR_MS = 2000;
export const HOUR_MS = 3_600_000;

export interface RateLimit {
  minIntervalMs: number;
  maxPerHour: number;
}

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
  /** A restart request is still under way (a CRI stop waits out the grace period): rule 7. */
  restartInFlight?: boolean;
  /** The last restart request's answer, heard since the last decision: recorded first (heard). */
  answer?: RestartAnswer | null;
  /** The journal lags behind what was carried out (a save failed): the decision writes it again first. */
  journalLags?: boolean;
}

/** A restart request's answer as the restart runner heard it (src/agent/execute.ts). */
export interface RestartAnswer {
  step: RestartStep;
  /** null: ovnkube-node was stopped; else the runtime's refusal (code: a bounded label, recorder.ts). */
  error: { message: string; code: string } | null;
}

export type Step =
  | { kind: 'journal'; migration: Migration }
  | { kind: 'replace'; action: ReplaceAction }
  | { kind: 'restart'; target: RestartTarget; migration: Migration };
export type RestartStep = Extract<Step, { kind: 'restart' }>;

export interface RestartView {
  phase: Phase | null;
  reason: Reason | null;
  /** What failed on the restart path, in words: the status's lastError when the pass itself did not fail. */
  error?: string;
}

/** What already happened, put on record before the steps. */
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
  /** The plan's: --dry-run (nothing carried out), waiting on ovnkube-node (look again every second). */
  dryRun: boolean;
  waiting: boolean;
}
