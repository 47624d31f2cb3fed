// What the owner loop tells observers (metrics, the event history) about the steps it carried
// out, beyond the status report. Every value but the rendered routes is bounded (modes,
// results, errno names and ERR_GWMODE_* codes), so that a recorder may use it as a label.
import type { GatewayMode } from './types.js';

export type ReplaceResult = 'done' | 'failed' | 'put_back' | 'put_back_failed';

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
  result: 'stopped' | 'failed' | 'completed';
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

/** Several recorders as one; a recorder that throws never breaks the loop or the others. */
export function recorders(list: AgentRecorder[], onError: (err: unknown) => void): AgentRecorder {
  const each =
    (k: keyof AgentRecorder) =>
    (...args: unknown[]) => {
      for (const r of list) {
        try {
          (r[k] as (...a: unknown[]) => void)(...args);
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

export const NO_RECORDER = recorders([], () => undefined);

/** An error's code as a bounded label: errno names (ENOENT), the agent's own (ERR_GWMODE_VERIFY), else UNKNOWN. */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{1,47}$/.test(code) ? code : 'UNKNOWN';
}
