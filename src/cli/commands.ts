// What the commands that touch the kernel do (run, plan, apply, rollback), given parsed
// flags; the socket clients are in ask.ts. Each returns its result (exit-codes.ts says
// what each code means) and never ends the process: main.ts does. The kernel and journal
// work of rollback is src/rollback/run.ts; what is printed, render.ts.
import { runDaemon } from '../agent/daemon.js';
import { InterruptedError, outcomeUnknown } from '../agent/execute.js';
import type { OvnkubeProbe } from '../agent/observe.js';
import { reconcile } from '../agent/reconcile.js';
import {
  lastWins,
  resolvePlanSettings,
  resolveSettings,
  type PlanSettings,
  type RawPlanOptions,
  type RawRunOptions,
} from '../config/settings.js';
import { applyMigration, summarize } from '../core/decide.js';
import type { Migration } from '../core/migration.js';
import { systemClock } from '../clock.js';
import type { Observation, Plan, PlannerConfig } from '../core/types.js';
import { KernelDataplane } from '../dataplane/kernel.js';
import type { Dataplane } from '../dataplane/types.js';
import { EMPTY_JOURNAL, Journal, JournalError, type JournalData } from '../restart/journal.js';
import { readBootId, underFreshNote } from '../restart/journal-time.js';
import { createLogger } from '../log.js';
import type { Logger } from 'pino';
import { readModeSource } from '../mode/source.js';
import { runRollback } from '../rollback/run.js';
import { systemdNotifier, watchdogUsec } from '../systemd/notify.js';
import { OvnkubeScanner, summarise } from '../ovnkube/proc.js';
import { CommandError, failure, failureOf, type CommandResult, type ExitCode } from './exit-codes.js';
import { Interruption } from './interrupt.js';
import { assertStateDirWritable, lockStateDir, type StateDirLock } from './lock.js';
import { prefixes, renderApplied, renderPreview, renderRollback } from './render.js';

/** The planner's part of the settings, and nothing else. */
export function plannerConfig(s: PlanSettings): PlannerConfig {
  const {
    serviceCidrs,
    gatewayInterface,
    managementInterface,
    layout,
    ovnkubeModeCheck,
    mtu,
    gatewayNexthop,
    masqueradeNexthops,
    osRelease,
    confEvidence,
    dryRun,
  } = s;
  return {
    serviceCidrs,
    gatewayInterface,
    managementInterface,
    layout,
    ovnkubeModeCheck,
    mtu,
    gatewayNexthop,
    masqueradeNexthops,
    osRelease,
    confEvidence,
    dryRun,
  };
}

/** /proc is read whatever --ovnkube-mode-check says: the process's identity proves a restart. */
export function ovnkubeProbe(s: PlanSettings): OvnkubeProbe {
  const scanner = new OvnkubeScanner();
  return async (hint) => summarise(scanner.scan(hint?.routeEventOnly ?? false), s.ovnkubeConfMode);
}

/** What a test may wrap around the real parts (fault injection); nothing a user can reach. */
export interface RunWrappers {
  dataplane?: (real: Dataplane) => Dataplane;
  journal?: (dir: string) => Journal;
}

const serving = 'not starting a second agent';

/**
 * `run`: the agent, until it stops; its result comes when it does (exit 0 on SIGTERM) or
 * when it refuses to start. A refusal after the lock leaves nothing of what taking the
 * lock created (a second agent on another --state-dir, refused by the live socket).
 */
export async function runCommand(raw: RawRunOptions, wrap: RunWrappers = {}): Promise<CommandResult> {
  const settings = await resolveSettings(raw);
  let lock: StateDirLock;
  try {
    lock = await lockStateDir(settings.stateDir);
  } catch (err) {
    return failure(err, { held: serving });
  }
  const log = createLogger(settings.logLevel);
  const real = new KernelDataplane();
  const dataplane = wrap.dataplane?.(real) ?? real;
  return new Promise<CommandResult>((resolve) => {
    // A bug must not leave a half-working agent: log it and exit; the supervisor
    // (kubelet or systemd) restarts a clean one, and the journal remembers restarts.
    const fatal = (err: unknown) => {
      log.fatal({ err }, 'unexpected error: exiting');
      log.flush();
      resolve({ code: 1 });
    };
    process.on('uncaughtException', fatal);
    process.on('unhandledRejection', fatal);
    runDaemon(raw, settings, {
      ...(wrap.journal ? { journal: wrap.journal } : {}),
      log,
      dataplane,
      notifier: systemdNotifier(),
      watchdogUsec: watchdogUsec(),
      plannerConfig,
      probeFor: ovnkubeProbe,
      clock: systemClock,
      exit: (code) => resolve({ code: code === 0 ? 0 : 1 }),
    }).catch((err: unknown) => {
      // Refused (a typed error: exit 1 or 2, one line) or a bug (logged, exit 1): either
      // way the agent never ran, and leaves nothing of what taking the lock created.
      const refused = failureOf(err, { held: serving });
      dataplane.close();
      lock.release();
      if (refused === null) fatal(err);
      else resolve(refused);
    });
  });
}

export type PlanOptions = RawPlanOptions & { json?: boolean; dryRun?: boolean };

/** What a test may wrap around the one-shot commands' real parts (fault injection); nothing a user can reach. */
export interface OnceWrappers {
  dataplane?: (real: Dataplane) => Dataplane;
}

/** The desired mode as the mode file says it, with where it came from. */
async function readDesired(modeFile: string, log: Logger) {
  const read = await readModeSource(modeFile);
  const desired = {
    mode: read.mode,
    source: { path: modeFile, error: read.error, detail: read.mode !== null ? (read.detail ?? null) : null },
  };
  if (desired.source.detail)
    log.warn(
      { path: modeFile, mode: read.mode, detail: desired.source.detail },
      'desired mode read as the cluster network operator reads it',
    );
  return desired;
}

const converged = (p: Plan): ExitCode =>
  summarize(p, { phase: null, reason: null }, new Map(), null).phase === 'Converged' ? 0 : 1;

const asJson = (shown: Plan, applied: number) =>
  JSON.stringify(
    {
      ...shown,
      reasonCodes: shown.reasons.map((r) => r.code),
      reasons: shown.reasons.map((r) => r.message),
      actions: shown.actions.map((a) => ({ ...a, reason: a.reason.message })),
      applied,
    },
    null,
    2,
  ) + '\n';

/**
 * `plan`, and `apply --dry-run`: observe once and print what would be done. It only
 * looks: no lock, no journal, no kernel change. Exit 0 when nothing is to do.
 */
async function preview(raw: PlanOptions, dryRunApply: boolean, wrap: OnceWrappers): Promise<CommandResult> {
  const settings = { ...(await resolvePlanSettings(raw)), dryRun: dryRunApply };
  // Logs go to stderr here: stdout carries the plan.
  const log = createLogger(settings.logLevel === 'info' ? 'warn' : settings.logLevel, process.stderr);
  const desired = await readDesired(settings.modeFile, log);
  const real = new KernelDataplane();
  const dataplane = wrap.dataplane?.(real) ?? real;
  try {
    const { planned } = await reconcile(
      { dataplane, probe: ovnkubeProbe(settings), log },
      desired,
      plannerConfig(settings),
      false,
    );
    return {
      code: converged(planned),
      stdout: raw.json ? asJson(planned, 0) : renderPreview(planned, dryRunApply) + '\n',
    };
  } catch (err) {
    return { code: 1, stderr: `ovn-gwmode-agent: ${(err as Error).message}\n` };
  } finally {
    dataplane.close();
  }
}

/** `plan`: observe once and print the plan; it only looks, so it takes no lock. */
export const planCommand = (raw: PlanOptions, wrap: OnceWrappers = {}): Promise<CommandResult> =>
  preview(raw, false, wrap);

/**
 * `apply`: one pass that acts, under the agent lock, so never beside a running agent.
 * Its migration goes to the agent's journal before the first replace (src/core/decide.ts,
 * applyMigration): `rollback` undoes it, and an agent started after it, even after an
 * apply killed midway, finishes it (the replaces left, then the restart it owes) and
 * never starts it again. With --dry-run (OVN_GWMODE_DRY_RUN) it is a plan that says so:
 * no lock, no journal, no kernel change.
 */
export function applyCommand(raw: PlanOptions & { stateDir: string }, wrap: OnceWrappers = {}): Promise<CommandResult> {
  if (lastWins(raw).dryRun === true) return preview(raw, true, wrap);
  const stop = new Interruption('apply');
  return stop.run(() => apply(raw, lastWins(raw).stateDir, stop, wrap));
}

/** The journal, for a command about to change the kernel; an unreadable one is set aside, as the agent does. */
async function loadJournal(journal: Journal, log: Logger, what: string): Promise<JournalData> {
  try {
    return await journal.load();
  } catch (err) {
    if (!(err instanceof JournalError)) throw err;
    let where: string;
    try {
      where = `kept as ${await journal.setAside(systemClock.wall())}`;
    } catch (asideErr) {
      throw new CommandError(
        `${what}: ${err.message}, and it cannot be set aside (${(asideErr as Error).message}); changing nothing`,
        2,
      );
    }
    log.warn({ err }, `${err.message} (${where}); ${what} goes on without it`);
    return EMPTY_JOURNAL;
  }
}

async function apply(
  raw: PlanOptions,
  stateDir: string,
  stop: Interruption,
  wrap: OnceWrappers,
): Promise<CommandResult> {
  const settings = { ...(await resolvePlanSettings(raw)), dryRun: false };
  let lock: StateDirLock;
  try {
    lock = await lockStateDir(stateDir);
  } catch (err) {
    return failure(err, { held: 'apply does not act beside a running agent: stop it, or leave the work to it' });
  }
  // Every kernel change is journaled first: apply does not act where no journal can be written.
  try {
    await assertStateDirWritable(stateDir);
  } catch (err) {
    lock.release();
    return failure(err, { what: 'apply' });
  }
  const log = createLogger(settings.logLevel, process.stderr);
  const journal = new Journal(stateDir);
  const onRecord = await loadJournal(journal, log, 'apply');
  const desired = await readDesired(settings.modeFile, log);
  const real = new KernelDataplane();
  const dataplane = wrap.dataplane?.(real) ?? real;
  let journaled: Migration | null = null;
  const beforeReplaces = async (planned: Plan, observed: Observation): Promise<void> => {
    stop.beginChanges();
    const m = applyMigration(planned, desired.mode, onRecord.migration, observed.ovnkube, systemClock.wall());
    if (m === null) return;
    await journal.save({ ...underFreshNote(onRecord, readBootId(), systemClock), migration: m });
    journaled = m;
    log.info({ mode: m.mode, routes: m.routes.length }, 'migration journaled: replacing the routes');
  };
  /** Takes the migration off the record again (nothing of it was carried out); says so when that fails. */
  const unjournal = async (): Promise<string> => {
    if (journaled === null) return '';
    try {
      await journal.save(onRecord);
      return '';
    } catch (err) {
      return `; the journal still records the migration to ${journaled.mode} (${(err as Error).message}): an agent started next finds its routes already as they are`;
    }
  };
  try {
    const deps = { dataplane, probe: ovnkubeProbe(settings), log, beforeReplaces, stopRequested: stop.requested };
    const result = await reconcile(deps, desired, plannerConfig(settings), true);
    const replaced = result.applied > 0 ? result.planned.actions : [];
    const code = converged(result.final);
    const out = raw.json
      ? asJson(result.final, result.applied)
      : renderApplied(result.final, replaced, journaled ?? onRecord.migration, desired.mode, stateDir, code === 0) +
        '\n';
    return { code, stdout: out };
  } catch (err) {
    if (err instanceof InterruptedError) {
      const line =
        err.done.length === 0
          ? `apply: interrupted by ${err.signal} before the first replace; nothing changed${await unjournal()}`
          : `apply: interrupted by ${err.signal} after ${err.done.length} of ${err.done.length + err.left.length} replace(s): replaced ${prefixes(err.done)}; not replaced ${prefixes(err.left)}; ` +
            `the journal records the migration to ${desired.mode}: the agent completes it when it runs, \`rollback --yes\` puts back what was replaced`;
      return { code: 1, stderr: `ovn-gwmode-agent: ${line}\n` };
    }
    // Refused by the kernel: what had changed was put back, so the migration is off the
    // record. A replace whose answer was lost (or a put-back that failed) may have
    // happened: the record stays, as the agent's does.
    const kept = !outcomeUnknown(err) ? await unjournal() : '';
    return { code: 1, stderr: `ovn-gwmode-agent: ${(err as Error).message}${kept}\n` };
  } finally {
    dataplane.close();
  }
}

export type RollbackOptions = Omit<PlanOptions, 'modeFile' | 'ovnkubeModeCheck' | 'json'> & {
  stateDir: string;
  yes: boolean;
};

/**
 * `rollback`: puts back the routes the journal's migration replaced (src/rollback/run.ts
 * carries it out, src/core/rollback.ts decides). Without --yes it prints the plan and
 * changes nothing; with it, it takes the node's lock (so never beside a running agent),
 * replaces all or none, and verifies. Exit 0 when done (or, without --yes, when the plan
 * may be carried out), 1 when refused, failed or interrupted, 2 for a bad flag or a
 * journal it cannot read.
 */
export function rollbackCommand(raw: RollbackOptions, wrap: OnceWrappers = {}): Promise<CommandResult> {
  const stop = new Interruption('rollback');
  return stop.run(() => rollback(raw, stop, wrap));
}

async function rollback(raw: RollbackOptions, stop: Interruption, wrap: OnceWrappers): Promise<CommandResult> {
  const given = lastWins(raw);
  // The desired mode plays no part: a placeholder satisfies the planner's settings.
  const settings = await resolvePlanSettings({ ...given, modeFile: '(not read by rollback)', ovnkubeModeCheck: 'off' });
  let lock: StateDirLock | null = null;
  if (given.yes) {
    try {
      lock = await lockStateDir(given.stateDir);
    } catch (err) {
      return failure(err, { held: 'rollback does not act beside a running agent: stop it first' });
    }
  }
  const log = createLogger(settings.logLevel, process.stderr);
  const real = new KernelDataplane();
  const dataplane = wrap.dataplane?.(real) ?? real;
  try {
    const outcome = await runRollback({
      dataplane,
      journal: new Journal(given.stateDir),
      log,
      clock: systemClock,
      config: plannerConfig(settings),
      cidrsFrom:
        given.serviceCidr && given.serviceCidr.length > 0 ? '--service-cidr' : `--ovnkube-config's service-cidrs`,
      carryOut: given.yes,
      beginChanges: () => stop.beginChanges(),
      stopRequested: stop.requested,
    });
    // Refused before anything was journaled: what taking the lock made goes again.
    if (outcome.kind === 'refused') lock?.release();
    return {
      code: outcome.kind === 'refused' || outcome.kind === 'not-journaled' || outcome.kind === 'interrupted' ? 1 : 0,
      ...renderRollback(outcome),
    };
  } catch (err) {
    return failureOf(err) ?? { code: 1, stderr: `ovn-gwmode-agent: ${(err as Error).message}\n` };
  } finally {
    dataplane.close();
  }
}
