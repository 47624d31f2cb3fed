// What the owner loop tells observers about the steps it carried out, beyond the
// status report every pass publishes (Agent.onStatus). Metrics and the event history
// are both recorders; the loop never knows which are attached.
//
// Every value here is bounded: modes, results and error codes (errno names and the
// agent's ERR_GWMODE_* codes), never free text, so that a recorder may use them as
// metric labels. Routes are rendered for the event history, never used as labels.
import type { GatewayMode } from './types.js';

export type ReplaceResult = 'done' | 'failed' | 'put_back' | 'put_back_failed';
export type RestartResult = 'stopped' | 'failed' | 'completed';

export interface ReplaceRecord {
  cidr: string;
  /** The desired mode the replace served (for a put-back: the migration it undoes). */
  mode: GatewayMode | null;
  /** The route before and after, rendered (`via 172.18.0.1 dev br-ex mtu 1400`). */
  before: string;
  after: string;
  result: ReplaceResult;
  /** The error code of a failed replace or put-back; null otherwise. */
  code: string | null;
}

export interface RestartRecord {
  strategy: string;
  mode: GatewayMode;
  result: RestartResult;
  /** What was stopped (`container 0123abcd (pod, attempt 1)`); null for `completed`. */
  target: string | null;
  code: string | null;
}

export interface AgentRecorder {
  replace(r: ReplaceRecord): void;
  restart(r: RestartRecord): void;
  desiredModeChanged(from: GatewayMode | null, to: GatewayMode): void;
  /** The mode file turned bad (once per distinct error, as it is logged). */
  modeFileError(path: string): void;
  /** The kernel dropped notifications: a full resync follows. */
  notificationsLost(): void;
  /** One pass ended (clock times, ms); `errorCode` when it failed. */
  reconciled(startedAt: number, endedAt: number, errorCode: string | null): void;
}

export const NO_RECORDER: AgentRecorder = {
  replace: () => undefined,
  restart: () => undefined,
  desiredModeChanged: () => undefined,
  modeFileError: () => undefined,
  notificationsLost: () => undefined,
  reconciled: () => undefined,
};

/** Several recorders as one; a recorder that throws never breaks the loop or the others. */
export function recorders(list: AgentRecorder[], onError: (err: unknown) => void): AgentRecorder {
  const each =
    <K extends keyof AgentRecorder>(k: K) =>
    (...args: Parameters<AgentRecorder[K]>) => {
      for (const r of list) {
        try {
          (r[k] as (...a: Parameters<AgentRecorder[K]>) => void)(...args);
        } catch (err) {
          onError(err);
        }
      }
    };
  return {
    replace: each('replace'),
    restart: each('restart'),
    desiredModeChanged: each('desiredModeChanged'),
    modeFileError: each('modeFileError'),
    notificationsLost: each('notificationsLost'),
    reconciled: each('reconciled'),
  };
}

/**
 * An error's code as a bounded label value: errno names (ENOENT) and the agent's own
 * codes (ERR_GWMODE_VERIFY); anything else (no code, free text) is UNKNOWN.
 */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,47}$/.test(code) ? code : 'UNKNOWN';
}
