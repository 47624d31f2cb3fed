// A restart request's answer, put on record: the runtime answers long after the pass
// that requested it (a CRI stop waits out ovnkube-node's grace period), and the pass
// its answer wakes decides what the answer changes. The answer belongs to the migration
// it was requested for: a migration since superseded (another mode, another attempt) is
// told the event only. A failure after a new ovnkube-node was already seen (done) is moot.
import type { RecordStep, RestartAnswer } from './decision.js';
import { transition, type Migration } from './migration.js';

export interface Heard {
  /** The migration on record once the answer is (what the decision goes on from). */
  migration: Migration | null;
  /** The event, and the migration's record when it changed: carried out before any step. */
  records: RecordStep[];
}

export function heard(m: Migration | null, answer: RestartAnswer | null | undefined, now: number): Heard {
  if (!answer) return { migration: m, records: [] };
  const { step, error } = answer;
  const told: RecordStep = {
    kind: 'answered',
    mode: step.migration.mode,
    target: step.target.describe,
    result: error ? 'failed' : 'stopped',
    code: error?.code ?? null,
    error: error?.message ?? null,
  };
  const same =
    m !== null &&
    m.mode === step.migration.mode &&
    m.startedAt === step.migration.startedAt &&
    m.attempts === step.migration.attempts;
  if (!same) return { migration: m, records: [told] };
  const after = transition(m, { kind: 'answered', error: error?.message ?? null }, now);
  if (after === m) return { migration: m, records: [told] };
  const what = error ? 'a failed restart request' : 'the restart request';
  const record: RecordStep = { kind: 'record', migration: after, what };
  return { migration: after, records: error ? [told, record] : [record, told] };
}
