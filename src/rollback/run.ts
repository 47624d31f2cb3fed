// Carrying out `rollback`: the journal, the kernel and the check after, with no output
// of its own. src/core/rollback.ts decides what to put back; this reads the journal and
// the kernel for it, journals the rollback before its first put-back, puts back all or
// none, checks the kernel says so, and marks the rollback done. It returns what happened
// as a value, for src/cli to render.
//
// The migration's routes stay on record, so a rollback stopped midway (by a signal or a
// kill) is finished by running it again: those put back already are skipped, and any
// moved again since are put back too.
import type { Logger } from 'pino';
import { applyReplaces, InterruptedError, type StopRequested } from '../agent/execute.js';
import { observe, type OvnkubeProbe } from '../agent/observe.js';
import type { Clock } from '../clock.js';
import type { Migration } from '../core/migration.js';
import { watchedOf } from '../core/planner.js';
import type { Reason } from '../core/reasons.js';
import { planRollback } from '../core/rollback.js';
import { sameNextHop } from '../core/route.js';
import type { PlannerConfig, ReplaceAction } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';
import { parseCidr } from '../net/cidr.js';
import type { Journal, JournalData } from '../restart/journal.js';
import { readBootId, underFreshNote } from '../restart/journal-time.js';

/** The migration replaced routes the given service CIDRs do not name: a bad flag (exit 2). */
export class RollbackCidrsError extends Error {
  readonly code = 'ERR_GWMODE_ROLLBACK_CIDRS';
}

/** After the put-backs the kernel does not show them all. */
export class RollbackUnverifiedError extends Error {
  readonly code = 'ERR_GWMODE_ROLLBACK_UNVERIFIED';
}

export interface RollbackDeps {
  dataplane: Dataplane;
  journal: Journal;
  log: Logger;
  clock: Clock;
  config: PlannerConfig;
  /** ovnkube-node from /proc, as plan and run read it: its 4.10+ flags refuse the rollback (core/platform.ts). */
  probe: OvnkubeProbe;
  /** Where the service CIDRs came from, to name it when they fall short (`--service-cidr`). */
  cidrsFrom: string;
  /** Put back (--yes); otherwise only say what would be put back. */
  carryOut: boolean;
  /** Called before the first change (the journal write); throws when the command was abandoned. */
  beginChanges: () => void;
  stopRequested: StopRequested;
}

export type RollbackOutcome = { migration: Migration | null } & (
  | { kind: 'refused'; refusals: Reason[] }
  /** Nothing on record to put back (NothingToRollBack): nothing to do. */
  | { kind: 'nothing'; why: Reason }
  | { kind: 'planned'; actions: ReplaceAction[] }
  /** The rollback could not be journaled: nothing put back. */
  | { kind: 'not-journaled'; actions: ReplaceAction[]; error: Error }
  | { kind: 'interrupted'; actions: ReplaceAction[]; signal: string; done: ReplaceAction[]; left: ReplaceAction[] }
  /** unrecorded: why the journal still says the rollback is under way, or null. */
  | { kind: 'done'; actions: ReplaceAction[]; unrecorded: Error | null }
);

/** Only the given service CIDRs are looked at: a migration route outside them would read as "no route" while it is there. */
function assertNamed(migration: Migration | null, config: PlannerConfig, from: string): void {
  const named = new Set(config.serviceCidrs.map((c) => c.text));
  const unnamed = (migration?.routes ?? []).map((r) => r.key.prefix).filter((p) => !named.has(parseCidr(p).text));
  if (unnamed.length > 0) {
    throw new RollbackCidrsError(
      `rollback: the journal's migration replaced ${unnamed.join(', ')}, which ${from} (${[...named].join(', ')}) does not name: give the service CIDRs it was made with`,
    );
  }
}

/** Throws JournalError when the journal cannot be read, RollbackCidrsError for CIDRs that fall short, and what the kernel throws. */
export async function runRollback(deps: RollbackDeps): Promise<RollbackOutcome> {
  const { dataplane, journal: store, log, clock, config } = deps;
  const journal: JournalData = await store.load();
  const migration = journal.migration;
  assertNamed(migration, config, deps.cidrsFrom);
  const watched = watchedOf(config);
  const rb = planRollback(migration, await observe(dataplane, watched, deps.probe), config);
  const nothing = rb.refusals.find((r) => r.code === 'NothingToRollBack');
  if (nothing) return { migration, kind: 'nothing', why: nothing };
  if (rb.refusals.length > 0) return { migration, kind: 'refused', refusals: rb.refusals };
  const actions = rb.actions;
  if (!deps.carryOut) return { migration, kind: 'planned', actions };
  const m = migration!;
  // Under a note of now: the rollback's own times are wall times of now (journal-time.ts).
  const mark = (rollback: NonNullable<Migration['rollback']>) => {
    const fresh = underFreshNote(journal, readBootId(), clock);
    return store.save({ ...fresh, migration: { ...fresh.migration!, rollback } });
  };
  deps.beginChanges();
  // Journaled before the first put-back, as every kernel change is.
  const startedAt = clock.wall();
  try {
    await mark({ startedAt, doneAt: null });
  } catch (err) {
    return { migration, kind: 'not-journaled', actions, error: err as Error };
  }
  try {
    await applyReplaces(dataplane, log, actions, undefined, deps.stopRequested);
  } catch (err) {
    if (!(err instanceof InterruptedError)) throw err;
    return { migration, kind: 'interrupted', actions, signal: err.signal, done: err.done, left: err.left };
  }
  const after = await observe(dataplane, watched, deps.probe);
  const wrong = actions.filter(
    (a) => !(after.routes.get(a.key.prefix) ?? []).some((r) => sameNextHop(r.nextHop, a.to)),
  );
  if (wrong.length > 0)
    throw new RollbackUnverifiedError(`after replacing, not put back: ${wrong.map((a) => a.key.prefix).join(', ')}`);
  try {
    await mark({ startedAt, doneAt: clock.wall() });
  } catch (err) {
    return { migration: m, kind: 'done', actions, unrecorded: err as Error };
  }
  return { migration: m, kind: 'done', actions, unrecorded: null };
}
