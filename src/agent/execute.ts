// Carrying a decision out: the one place a pass's effects happen (journal writes, kernel changes,
// restart requests and their events).
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Decision, RestartAnswer, RestartStep } from '../core/decide.js';
import { recordApplied, type FightState } from '../core/fights.js';
import { rollingBack } from '../core/migration.js';
import { must } from '../core/must.js';
import { errorCode, NO_RECORDER, type AgentRecorder, type ReplaceResult } from '../core/recorder.js';
import { renderNextHop } from '../core/route.js';
import type { DesiredMode, ReplaceAction } from '../core/types.js';
import { coded, NetlinkError } from '../dataplane/errors.js';
import type { Dataplane } from '../dataplane/types.js';
import type { RestartStrategy } from '../restart/strategy.js';
import type { JournalKeeper } from './journal-keeper.js';

export interface Effects {
  dataplane: Pick<Dataplane, 'replaceRoute'>;
  /** The replace to use (the loop's expects each write's echo: inputs.ts). */
  writes?: Pick<Dataplane, 'replaceRoute'>;
  log: Logger;
  clock: Clock;
  /** Read by every command (`plan` too); written only by a pass that acts. */
  journal: JournalKeeper;
  /** Told of each step carried out (metrics, the event history). */
  recorder?: AgentRecorder;
  /** The loop's; a one-shot command restarts nothing. */
  restarts?: { strategy: RestartStrategy; runner: RestartRunner };
  /** Called before the first change; throws when the command was abandoned. */
  beginChanges?: () => void;
  /** The signal a one-shot command was told to stop by, or null: asked before each replace. */
  stopRequested?: () => string | null;
}

/** Its records (what already happened), then its steps in order. */
export async function execute(
  e: Effects,
  s: { fights: FightState },
  decision: Pick<Decision, 'records' | 'steps'>,
  mode: DesiredMode['mode'],
): Promise<void> {
  const { log, clock } = e;
  const { journal } = e;
  const recorder = e.recorder ?? NO_RECORDER;
  const strategy = e.restarts?.strategy.name ?? 'none';
  if (decision.records.length + decision.steps.length > 0) e.beginChanges?.();
  for (const r of decision.records) {
    if (r.kind === 'catch-up') await journal.catchUp();
    else if (r.kind === 'answered') {
      if (r.result === 'failed')
        log.error({ error: r.error, code: r.code, target: r.target }, 'restart of ovnkube-node failed');
      recorder.restart({ strategy, mode: r.mode, result: r.result, target: r.target, code: r.code });
    } else if (r.kind === 'completed')
      recorder.restart({ strategy, mode: r.mode, result: 'completed', target: null, code: null });
    else {
      // Said once, when the restart becomes done: not at each later record (a rollback's among them).
      const proven = r.migration?.restart === 'done' && journal.data.migration?.restart !== 'done';
      await journal.after({ ...journal.data, migration: r.migration }, r.what);
      if (proven)
        log.info({ mode: r.migration?.mode }, 'a new ovnkube-node runs the desired mode: watching the routes settle');
    }
  }
  const steps = decision.steps;
  if (steps.length === 0) return;
  log.info({ steps: steps.map(describe) }, 'carrying out plan');
  const before = journal.data;
  for (const step of steps) {
    if (step.kind === 'journal') {
      await journal.before({ ...journal.data, migration: step.migration });
      const what = rollingBack(step.migration)
        ? 'rollback journaled: putting the routes back'
        : 'migration journaled: replacing the routes';
      log.info({ mode: step.migration.mode }, what);
    } else if (step.kind === 'restart') {
      // docs/design.md, "A restart request slow to answer".
      const runner = must(e.restarts, 'the restart runner of a restart step').runner;
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
  const replaces = steps.flatMap((step) => (step.kind === 'replace' ? [step.action] : []));
  if (replaces.length === 0) return;
  const done: ReplaceAction[] = [];
  try {
    await applyReplaces(e, replaces, done, mode);
  } catch (err) {
    // Replaced and put back: a flap, a set-back when the next pass finds it (core/fights.ts, point 5).
    const note = `the agent put it back itself each time another replace of the same change failed (${(err as Error).message})`;
    if (done.length > 0) s.fights = recordApplied(s.fights, done, clock.now(), note);
    // Refused by the kernel (all put back) or stopped before the first replace: nothing was migrated,
    // so the migration comes off the record. A replace whose answer was lost may have happened: it stays.
    const nothingDone = err instanceof InterruptedError ? err.done.length === 0 : !outcomeUnknown(err);
    const what = rollingBack(journal.data.migration) ? 'rollback' : 'migration';
    if (journal.data !== before && nothingDone)
      await journal.after(before, `taking the ${what} the kernel refused off the record`, err);
    throw err;
  }
  s.fights = recordApplied(s.fights, replaces, clock.now());
}

/** All or none: a failed replace puts back, in reverse order, every route already changed, each as it was. */
async function applyReplaces(e: Effects, actions: ReplaceAction[], done: ReplaceAction[], mode: DesiredMode['mode']) {
  const { log } = e;
  const record = (a: ReplaceAction, result: ReplaceResult, err: unknown) =>
    (e.recorder ?? NO_RECORDER).replace({ ...change(a), mode, result, code: err === null ? null : errorCode(err) });
  const writes = e.writes ?? e.dataplane;
  for (const a of actions) {
    const signal = e.stopRequested?.() ?? null;
    if (signal !== null) throw new InterruptedError(signal, [...done], actions.slice(done.length));
    try {
      await writes.replaceRoute(a);
    } catch (err) {
      const failed = `replace of ${a.key.prefix} failed: ${(err as Error).message}`;
      record(a, 'failed', err);
      if (done.length === 0) throw err;
      const notPutBack: string[] = [];
      for (const d of [...done].reverse()) {
        const back = { ...d, from: d.to, to: d.from };
        try {
          await writes.replaceRoute(back);
          record(back, 'put_back', null);
          log.warn(change(back), `put back ${d.key.prefix}: ${hops(back)} (${failed})`);
        } catch (undoErr) {
          notPutBack.push(`${d.key.prefix}: ${(undoErr as Error).message}`);
          record(back, 'put_back_failed', undoErr);
        }
      }
      if (notPutBack.length > 0)
        throw new PutBackError(`${failed}; could not put back ${notPutBack.join('; ')}`, { cause: err });
      throw new RevertedError(`${failed}; put back ${done.map((d) => d.key.prefix).join(', ')}`, err);
    }
    done.push(a);
    record(a, 'done', null);
    const { table, priority } = a.key;
    log.info({ ...change(a), table, priority }, `replaced route ${a.key.prefix}: ${hops(a)}`);
  }
}

const hops = (a: ReplaceAction) => `${renderNextHop(a.from)} -> ${renderNextHop(a.to)}`;
const change = (a: ReplaceAction) => ({
  cidr: a.key.prefix,
  before: renderNextHop(a.from),
  after: renderNextHop(a.to),
});

function describe(s: Decision['steps'][number]): string {
  if (s.kind === 'replace') return `replace ${s.action.key.prefix}: ${hops(s.action)} (${s.action.reason.message})`;
  if (s.kind === 'restart') return `restart ovnkube-node ${s.target.describe}`;
  return rollingBack(s.migration)
    ? `journal the rollback of the migration to ${s.migration.mode}`
    : `journal the migration to ${s.migration.mode} (restart owed)`;
}

/**
 * Whether a failed replace may still have happened: the kernel applies a change before it answers,
 * so a lost answer (a timeout, ENOBUFS, an unreadable reply) says nothing. Only the kernel's own
 * refusal (an errno in its acknowledgement) or a request never sent means "not done".
 */
function outcomeUnknown(err: unknown): boolean {
  if (err instanceof RevertedError) return outcomeUnknown(err.cause);
  const e = err as { code?: string; syscall?: string };
  if (e.code === 'ERR_GWMODE_NETLINK_TIMEOUT' || e.code === 'ENOBUFS') return true;
  return !(err instanceof NetlinkError) || e.syscall === 'recvmsg';
}

export class VerifyError extends coded('ERR_GWMODE_VERIFY') {}
export class PutBackError extends coded('ERR_GWMODE_PUT_BACK') {}

/** A replace failed and every route changed before it was put back: its error is the cause, its code this one's. */
export class RevertedError extends Error {
  readonly code: string;
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.code = (cause as { code?: string }).code ?? 'ERR_GWMODE_REPLACE';
  }
}

/** A one-shot command was told to stop between two replaces: none started after, nothing put back (a change too). */
export class InterruptedError extends coded('ERR_GWMODE_INTERRUPTED') {
  constructor(
    readonly signal: string,
    readonly done: ReplaceAction[],
    readonly left: ReplaceAction[],
  ) {
    super(`interrupted by ${signal} after ${done.length} of ${done.length + left.length} replace(s)`);
  }
}

/**
 * The restart request in flight (docs/design.md, "A restart request slow to answer"): journaled before
 * it goes out; its answer wakes a pass whose decision records it (core/decide.ts, `heard`).
 */
export class RestartRunner {
  /** Resolves once the request under way (if any) has been answered. */
  settled: Promise<void> = Promise.resolve();
  inFlight = false;
  /** Not yet taken into a decision. */
  answer: RestartAnswer | null = null;

  constructor(
    private readonly strategy: RestartStrategy,
    private readonly log: Logger,
    private readonly wake: (why: string) => void,
  ) {}

  /** In a decision about to be carried out: not handed out again. */
  took(answer: RestartAnswer | null): void {
    if (answer !== null && this.answer === answer) this.answer = null;
  }

  /** Once the request is journaled: sends it without awaiting it. */
  request(step: RestartStep): void {
    const { strategy } = this;
    const fields = { strategy: strategy.name, target: step.target.describe, mode: step.migration.mode };
    this.log.info(fields, `restarting ovnkube-node: ${step.target.describe}`);
    this.inFlight = true;
    const answered = (err: unknown) => {
      this.inFlight = false;
      this.answer = { step, error: err === null ? null : { message: (err as Error).message, code: errorCode(err) } };
      this.wake('restart request answered');
    };
    this.settled = strategy.restart(step.target).then(
      () => answered(null),
      (err: unknown) => answered(err ?? new Error('the restart request failed')),
    );
  }
}
