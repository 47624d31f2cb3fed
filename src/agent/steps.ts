// The one place the owner loop's effects happen: the decision's records (what already
// happened, put on record: the journal's catch-up, a restart's answer, the migration moved
// on), then its steps, in order: a journal entry followed by replaces (carried out
// together, all or none), or a restart. Journal writes, kernel changes, restart requests
// and the recorder's events of a round all happen here.
import type { Logger } from 'pino';
import type { Decision, Step } from '../core/decide.js';
import { errorCode, type AgentRecorder } from '../core/recorder.js';
import { renderNextHop } from '../core/route.js';
import type { GatewayMode, ReplaceAction } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';
import { applyReplaces, InterruptedError, outcomeUnknown, type StopRequested } from './execute.js';
import type { JournalKeeper } from './journal-keeper.js';
import type { RestartRunner } from './restart-runner.js';
import { must } from '../core/must.js';
import { rollingBack } from '../core/migration.js';

export interface ExecuteParts {
  journal: JournalKeeper;
  /** None for a one-shot command (once.ts): its decisions hold no restart step. */
  restarts?: RestartRunner;
  /** The dataplane's replace, each write's echo expected (inputs.ts). */
  writes: Pick<Dataplane, 'replaceRoute'>;
  recorder: AgentRecorder;
  log: Logger;
  strategy: string;
  /**
   * What the replaces gave each route (fight bookkeeping); `note`: they were put back by
   * the agent itself, and why (core/fights.ts, point 5).
   */
  applied: (actions: ReplaceAction[], note?: string) => void;
  /** A one-shot command told to stop (SIGTERM, SIGINT): asked before each replace (execute.ts). */
  stopRequested?: StopRequested;
}

export async function execute(
  parts: ExecuteParts,
  decision: Pick<Decision, 'records' | 'steps'>,
  mode: GatewayMode | null,
): Promise<void> {
  const { journal, log, recorder } = parts;
  for (const r of decision.records) {
    switch (r.kind) {
      case 'catch-up':
        await journal.catchUp();
        break;
      case 'answered':
        if (r.result === 'failed')
          log.error({ error: r.error, code: r.code, target: r.target }, 'restart of ovnkube-node failed');
        recorder.restart({ strategy: parts.strategy, mode: r.mode, result: r.result, target: r.target, code: r.code });
        break;
      case 'completed':
        recorder.restart({ strategy: parts.strategy, mode: r.mode, result: 'completed', target: null, code: null });
        break;
      case 'record':
        await journal.after({ ...journal.data, migration: r.migration }, r.what);
        if (r.migration?.restart === 'done')
          log.info({ mode: r.migration.mode }, 'a new ovnkube-node runs the desired mode: watching the routes settle');
    }
  }
  await carryOut(parts, decision.steps, mode);
}

async function carryOut(parts: ExecuteParts, steps: Step[], mode: GatewayMode | null): Promise<void> {
  if (steps.length === 0) return;
  const { journal, log, recorder } = parts;
  log.info({ steps: steps.map(describeStep) }, 'carrying out plan');
  const before = journal.data;
  const replaces = steps.flatMap((s) => (s.kind === 'replace' ? [s.action] : []));
  const done: ReplaceAction[] = [];
  for (const step of steps) {
    if (step.kind === 'journal') {
      await journal.before({ ...journal.data, migration: step.migration });
      const rollback = rollingBack(step.migration);
      log.info(
        { mode: step.migration.mode },
        rollback ? 'rollback journaled: putting the routes back' : 'migration journaled: replacing the routes',
      );
    }
    if (step.kind === 'restart') {
      // Point 4 of restart-runner.ts: never a second request while one is under way.
      const runner = must(parts.restarts, 'the restart runner of a restart step');
      if (runner.inFlight) {
        log.warn({ target: step.target.describe }, 'a restart request is still under way: not requesting another');
        continue;
      }
      // The rate limit counts the request at the time its migration records it (decide sets both).
      const restarts = [...journal.data.restarts, must(step.migration.last, 'the request a restart step records').at];
      await journal.before({ ...journal.data, migration: step.migration, restarts });
      runner.request(step);
    }
  }
  if (replaces.length === 0) return;
  try {
    await applyReplaces(
      parts.writes,
      log,
      replaces,
      (a, result, err) => {
        if (result === 'done') done.push(a);
        recorder.replace({
          cidr: a.key.prefix,
          mode,
          before: renderNextHop(a.from),
          after: renderNextHop(a.to),
          result,
          code: err === null ? null : errorCode(err),
        });
      },
      parts.stopRequested,
    );
  } catch (err) {
    // What was replaced and then put back is a flap of that route: it counts as a
    // set-back when the next pass finds it put back (core/fights.ts, point 5).
    if (done.length > 0)
      parts.applied(
        done,
        `the agent put it back itself each time another replace of the same change failed (${(err as Error).message})`,
      );
    // Refused by the kernel (what had changed was put back), or stopped before the first
    // replace: nothing was migrated, so the migration is off the record. A replace whose
    // answer was lost may have happened: the record stays, and the next observation tells.
    const nothingDone = err instanceof InterruptedError ? err.done.length === 0 : !outcomeUnknown(err);
    const what = rollingBack(journal.data.migration) ? 'rollback' : 'migration';
    if (journal.data !== before && nothingDone)
      await journal.after(before, `taking the ${what} the kernel refused off the record`, err);
    throw err;
  }
  parts.applied(replaces);
}

function describeStep(s: Step): string {
  switch (s.kind) {
    case 'journal':
      return rollingBack(s.migration)
        ? `journal the rollback of the migration to ${s.migration.mode}`
        : `journal the migration to ${s.migration.mode} (restart owed)`;
    case 'replace':
      return `replace ${s.action.key.prefix}: ${renderNextHop(s.action.from)} -> ${renderNextHop(s.action.to)} (${s.action.reason.message})`;
    case 'restart':
      return `restart ovnkube-node ${s.target.describe}`;
  }
}
