// What the commands that touch the kernel do (run, plan, apply, rollback), given parsed
// flags; the socket clients are in ask.ts. Exit codes: 0 converged / done,
// 1 not converged (or another agent holds the node), 2 bad configuration, a permission
// missing, or the agent unreachable.
import { addon } from '../native/addon.js';
import { runDaemon } from '../agent/daemon.js';
import { applyReplaces, InterruptedError, outcomeUnknown } from '../agent/execute.js';
import { observe, type OvnkubeProbe } from '../agent/observe.js';
import { reconcile } from '../agent/reconcile.js';
import { ConfigError, lastWins, resolvePlanSettings, resolveSettings, type PlanSettings, type RawPlanOptions, type RawRunOptions } from '../config/settings.js';
import { renderNextHop, sameNextHop } from '../core/route.js';
import { watchedOf } from '../core/planner.js';
import { planRollback } from '../core/rollback.js';
import { parseCidr } from '../net/cidr.js';
import { applyMigration, summarize } from '../core/decide.js';
import type { Migration } from '../core/migration.js';
import { systemClock } from '../clock.js';
import type { Observation, Plan, PlannerConfig, ReplaceAction } from '../core/types.js';
import { KernelDataplane } from '../dataplane/kernel.js';
import type { Dataplane } from '../dataplane/types.js';
import { EMPTY_JOURNAL, Journal, JournalError, type JournalData } from '../restart/journal.js';
import { readBootId, underFreshNote } from '../restart/journal-time.js';
import { createLogger } from '../log.js';
import type { Logger } from 'pino';
import { readModeSource } from '../mode/source.js';
import { systemdNotifier, watchdogUsec } from '../systemd/notify.js';
import { OvnkubeScanner, summarise } from '../ovnkube/proc.js';
import { SocketInUseError, SocketPermissionError } from '../status/server.js';
import { MetricsAddressError } from '../metrics/server.js';
import { Interruption } from './interrupt.js';
import { assertStateDirWritable, LockError, LockHeldError, lockStateDir, StateDirUnwritableError } from './lock.js';

/** The planner's part of the settings, and nothing else. */
export function plannerConfig(s: PlanSettings): PlannerConfig {
  const { serviceCidrs, gatewayInterface, managementInterface, layout, ovnkubeModeCheck, mtu, gatewayNexthop, masqueradeNexthops, osRelease, confEvidence, dryRun } = s;
  return { serviceCidrs, gatewayInterface, managementInterface, layout, ovnkubeModeCheck, mtu, gatewayNexthop, masqueradeNexthops, osRelease, confEvidence, dryRun };
}

/** /proc is read whatever --ovnkube-mode-check says: the process's identity proves a restart. */
export function ovnkubeProbe(s: PlanSettings): OvnkubeProbe {
  const scanner = new OvnkubeScanner();
  return async (hint) => summarise(scanner.scan(hint?.routeEventOnly ?? false), s.ovnkubeConfMode);
}

async function settingsOrExit<T>(resolve: () => Promise<T>): Promise<T> {
  try {
    return await resolve();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`ovn-gwmode-agent: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/** What a test may wrap around the real parts (fault injection); nothing a user can reach. */
export interface RunWrappers {
  dataplane?: (real: Dataplane) => Dataplane;
  journal?: (dir: string) => Journal;
}

/**
 * Takes the node's agent lock for the rest of the process, or exits: 1 when another
 * agent holds it (saying why `what` will not go on), 2 when this machine does not let
 * us take it.
 */
async function lockOrExit(stateDir: string, what: string): Promise<void> {
  try {
    await lockStateDir(stateDir);
  } catch (err) {
    if (err instanceof LockHeldError) {
      process.stderr.write(`ovn-gwmode-agent: ${err.message}; ${what}\n`);
      process.exit(1);
    }
    if (err instanceof LockError) {
      process.stderr.write(`ovn-gwmode-agent: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

export async function runCommand(raw: RawRunOptions, wrap: RunWrappers = {}): Promise<void> {
  const settings = await settingsOrExit(() => resolveSettings(raw));
  await lockOrExit(settings.stateDir, 'not starting a second agent');
  const log = createLogger(settings.logLevel);
  // A bug must not leave a half-working agent: log it and exit; the supervisor
  // (kubelet or systemd) restarts a clean one, and the journal remembers restarts.
  const fatal = (err: unknown) => {
    log.fatal({ err }, 'unexpected error: exiting');
    log.flush();
    process.exit(1);
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
  const real = new KernelDataplane();
  const dataplane = wrap.dataplane?.(real) ?? real;
  try {
    await runDaemon(raw, settings, {
      ...(wrap.journal ? { journal: wrap.journal } : {}),
      log,
      dataplane,
      notifier: systemdNotifier(),
      watchdogUsec: watchdogUsec(),
      plannerConfig,
      probeFor: ovnkubeProbe,
      clock: systemClock,
      trimMemory: () => addon.mallocTrim(),
      exit: (code) => process.exit(code),
    });
  } catch (err) {
    if (err instanceof SocketInUseError) {
      process.stderr.write(`ovn-gwmode-agent: ${err.message}; not starting a second agent\n`);
      dataplane.close();
      process.exit(1);
    }
    if (err instanceof SocketPermissionError || err instanceof MetricsAddressError) {
      process.stderr.write(`ovn-gwmode-agent: ${err.message}\n`);
      dataplane.close();
      process.exit(2);
    }
    throw err;
  }
}

function renderPlan(p: Plan): string {
  const lines = [`phase: ${summarize(p, { phase: null, reason: null }, new Map(), null).phase}`, `layout: ${p.layout}`, `release: ${p.platform.release} (${p.platform.evidence})`];
  if (p.actions.length === 0) lines.push('actions: none');
  else lines.push('actions:', ...p.actions.map((a) => `  replace ${a.key.prefix}: ${renderNextHop(a.from)} -> ${renderNextHop(a.to)}`));
  lines.push('routes:', ...p.routes.map((r) => `  ${r.inSync ? 'ok' : 'NO'} ${r.cidr}: ${r.multipath ? 'multipath (several next hops)' : r.observed ? renderNextHop(r.observed) : 'none'}`));
  if (p.reasons.length) lines.push('reasons:', ...p.reasons.map((r) => `  - ${r.message} [${r.code}]`));
  if (p.warnings.length) lines.push('warnings:', ...p.warnings.map((w) => `  - ${w}`));
  return lines.join('\n');
}

export type PlanOptions = RawPlanOptions & { json?: boolean; dryRun?: boolean };

/** What a test may wrap around the one-shot commands' real parts (fault injection); nothing a user can reach. */
export interface OnceWrappers {
  dataplane?: (real: Dataplane) => Dataplane;
}

/** `plan`: observe once and print the plan; it only looks, so it takes no lock. */
export const planCommand = (raw: PlanOptions): Promise<void> => onceCommand(raw, null);

/**
 * `apply`: one pass that acts, under the agent lock, so never beside a running agent.
 * Its migration goes to the agent's journal before the first replace (src/core/decide.ts,
 * applyMigration): `rollback` undoes it, and an agent started after it, even after an
 * apply killed midway, finishes it (the replaces left, then the restart it owes) and
 * never starts it again. With --dry-run (OVN_GWMODE_DRY_RUN) it is a plan that says so:
 * no lock, no journal, no kernel change.
 */
export const applyCommand = (raw: PlanOptions & { stateDir: string }, wrap: OnceWrappers = {}): Promise<void> => onceCommand(raw, lastWins(raw).stateDir, wrap);

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
      process.stderr.write(`ovn-gwmode-agent: ${what}: ${err.message}, and it cannot be set aside (${(asideErr as Error).message}); changing nothing\n`);
      process.exit(2);
    }
    log.warn({ err }, `${err.message} (${where}); ${what} goes on without it`);
    return EMPTY_JOURNAL;
  }
}

const prefixes = (actions: ReplaceAction[]): string => actions.map((a) => a.key.prefix).join(', ');

async function onceCommand(raw: PlanOptions, given: string | null, wrap: OnceWrappers = {}): Promise<void> {
  // An apply in dry run is a plan that says so: no lock, no journal, no kernel change.
  const dryRun = given !== null && lastWins(raw).dryRun === true;
  const lockDir = dryRun ? null : given;
  const apply = lockDir !== null;
  const stop = apply ? new Interruption('apply') : null;
  const settings = { ...(await settingsOrExit(() => resolvePlanSettings(raw))), dryRun };
  if (lockDir !== null) {
    await lockOrExit(lockDir, 'apply does not act beside a running agent: stop it, or leave the work to it');
    // Every kernel change is journaled first: apply does not act where no journal can be written.
    try {
      await assertStateDirWritable(lockDir);
    } catch (err) {
      if (!(err instanceof StateDirUnwritableError)) throw err;
      process.stderr.write(`ovn-gwmode-agent: apply: ${err.message}\n`);
      process.exit(2);
    }
  }
  // Logs go to stderr here: stdout carries the plan.
  const log = createLogger(settings.logLevel === 'info' && !apply ? 'warn' : settings.logLevel, process.stderr);
  const journal = lockDir !== null ? new Journal(lockDir) : null;
  const onRecord = journal !== null ? await loadJournal(journal, log, 'apply') : EMPTY_JOURNAL;
  const read = await readModeSource(settings.modeFile);
  const desired = { mode: read.mode, source: { path: settings.modeFile, error: read.error, detail: read.mode !== null ? (read.detail ?? null) : null } };
  if (desired.source.detail) log.warn({ path: settings.modeFile, mode: read.mode, detail: desired.source.detail }, 'desired mode read as the cluster network operator reads it');
  const real = new KernelDataplane();
  const dataplane = wrap.dataplane?.(real) ?? real;
  let journaled: Migration | null = null;
  const beforeReplaces = async (planned: Plan, observed: Observation): Promise<void> => {
    stop!.beginChanges();
    const m = applyMigration(planned, desired.mode, onRecord.migration, observed.ovnkube, systemClock.wall());
    if (m === null) return;
    await journal!.save({ ...underFreshNote(onRecord, readBootId(), systemClock), migration: m });
    journaled = m;
    log.info({ mode: m.mode, routes: m.routes.length }, 'migration journaled: replacing the routes');
  };
  /** Takes the migration off the record again (nothing of it was carried out); says so when that fails. */
  const unjournal = async (): Promise<string> => {
    if (journaled === null) return '';
    try {
      await journal!.save(onRecord);
      return '';
    } catch (err) {
      return `; the journal still records the migration to ${journaled.mode} (${(err as Error).message}): an agent started next finds its routes already as they are`;
    }
  };
  try {
    const deps = { dataplane, probe: ovnkubeProbe(settings), log, ...(stop ? { beforeReplaces, stopRequested: stop.requested } : {}) };
    const result = await reconcile(deps, desired, plannerConfig(settings), apply);
    const shown = apply ? result.final : result.planned;
    const out = raw.json
      ? JSON.stringify({ ...shown, reasonCodes: shown.reasons.map((r) => r.code), reasons: shown.reasons.map((r) => r.message), actions: shown.actions.map((a) => ({ ...a, reason: a.reason.message })), applied: result.applied }, null, 2)
      : renderPlan(shown) +
        (apply || dryRun ? `\napplied: ${result.applied} replace(s)${dryRun ? ' (dry run)' : ''}` : '') +
        (result.applied > 0 ? '\nnext: restart ovnkube-node (apply does not)' : '');
    process.stdout.write(out + '\n');
    process.exitCode = summarize(shown, { phase: null, reason: null }, new Map(), null).phase === 'Converged' ? 0 : 1;
  } catch (err) {
    if (err instanceof InterruptedError) {
      const line =
        err.done.length === 0
          ? `apply: interrupted by ${err.signal} before the first replace; nothing changed${await unjournal()}`
          : `apply: interrupted by ${err.signal} after ${err.done.length} of ${err.done.length + err.left.length} replace(s): replaced ${prefixes(err.done)}; not replaced ${prefixes(err.left)}; ` +
            `the journal records the migration to ${desired.mode}: the agent completes it when it runs, \`rollback --yes\` puts back what was replaced`;
      process.stderr.write(`ovn-gwmode-agent: ${line}\n`);
    } else {
      // Refused by the kernel: what had changed was put back, so the migration is off the
      // record. A replace whose answer was lost (or a put-back that failed) may have
      // happened: the record stays, as the agent's does.
      const kept = !outcomeUnknown(err) ? await unjournal() : '';
      process.stderr.write(`ovn-gwmode-agent: ${(err as Error).message}${kept}\n`);
    }
    process.exitCode = 1;
  } finally {
    dataplane.close();
  }
}

export type RollbackOptions = Omit<PlanOptions, 'modeFile' | 'ovnkubeModeCheck' | 'json'> & { stateDir: string; yes: boolean };

/**
 * `rollback`: puts back the routes the journal's migration replaced (src/core/rollback.ts
 * decides). Without --yes it prints the plan and changes nothing; with it, it takes the
 * node's lock (so never beside a running agent), replaces all or none, and verifies.
 * The rollback is journaled before its first put-back; the migration's routes stay on
 * record (a rollback stopped midway, by a signal or a kill, is finished by running it
 * again: those put back already are skipped, and any moved again since are put back too). Exit 0 when done (or,
 * without --yes, when the plan may be carried out), 1 when refused, failed or
 * interrupted, 2 for a bad flag or a journal it cannot read.
 */
export async function rollbackCommand(raw: RollbackOptions, wrap: OnceWrappers = {}): Promise<void> {
  const stop = new Interruption('rollback');
  const given = lastWins(raw);
  // The desired mode plays no part: a placeholder satisfies the planner's settings.
  const settings = await settingsOrExit(() => resolvePlanSettings({ ...given, modeFile: '(not read by rollback)', ovnkubeModeCheck: 'off' }));
  if (given.yes) await lockOrExit(given.stateDir, 'rollback does not act beside a running agent: stop it first');
  const log = createLogger(settings.logLevel, process.stderr);
  const store = new Journal(given.stateDir);
  let journal: JournalData;
  try {
    journal = await store.load();
  } catch (err) {
    process.stderr.write(`ovn-gwmode-agent: ${(err as Error).message}\n`);
    process.exit(2);
  }
  const config = plannerConfig(settings);
  // Only the given service CIDRs are looked at: a migration route outside them would read
  // as "no route" while it is there. Said as the bad flag it is.
  const named = new Set(config.serviceCidrs.map((c) => c.text));
  const unnamed = (journal.migration?.routes ?? []).map((r) => r.key.prefix).filter((p) => !named.has(parseCidr(p).text));
  if (unnamed.length > 0) {
    const from = given.serviceCidr && given.serviceCidr.length > 0 ? '--service-cidr' : `--ovnkube-config's service-cidrs`;
    process.stderr.write(`ovn-gwmode-agent: rollback: the journal's migration replaced ${unnamed.join(', ')}, which ${from} (${[...named].join(', ')}) does not name: give the service CIDRs it was made with\n`);
    process.exit(2);
  }
  const real = new KernelDataplane();
  const dataplane = wrap.dataplane?.(real) ?? real;
  const noProbe: OvnkubeProbe = async () => ({ mode: null, pid: null, id: null, detail: 'not looked at by rollback', release410Plus: null });
  /** Journals the rollback's progress in the migration's record, whose routes stay listed. */
  // Under a note of now: the rollback's own times are wall times of now (journal-time.ts).
  const mark = (m: Migration, rollback: NonNullable<Migration['rollback']>) => {
    const fresh = underFreshNote({ ...journal, migration: m }, readBootId(), systemClock);
    return store.save({ ...fresh, migration: { ...fresh.migration!, rollback } });
  };
  try {
    const watched = watchedOf(config);
    const m = journal.migration;
    const rb = planRollback(m, await observe(dataplane, watched, noProbe), config);
    const earlier = !m?.rollback ? '' : m.rollback.doneAt !== null ? `; rolled back at ${new Date(m.rollback.doneAt).toISOString()}` : `; a rollback begun at ${new Date(m.rollback.startedAt).toISOString()} did not finish`;
    const lines = [m === null ? 'migration: none on record' : `migration: to ${m.mode}, started ${new Date(m.startedAt).toISOString()}, ${m.routes.length} route(s) replaced${earlier}`];
    if (rb.refusals.length > 0) {
      lines.push('refused:', ...rb.refusals.map((r) => `  - ${r.message} [${r.code}]`));
      process.stdout.write(lines.join('\n') + '\n');
      process.exitCode = 1;
      return;
    }
    lines.push('actions:', ...rb.actions.map((a) => `  replace ${a.key.prefix}: ${renderNextHop(a.from)} -> ${renderNextHop(a.to)}`));
    if (!given.yes) {
      process.stdout.write([...lines, 'nothing changed: run again with --yes to carry it out'].join('\n') + '\n');
      return;
    }
    stop.beginChanges();
    // Journaled before the first put-back, as every kernel change is.
    const startedAt = systemClock.wall();
    try {
      await mark(m!, { startedAt, doneAt: null });
    } catch (err) {
      process.stdout.write(lines.join('\n') + '\n');
      process.stderr.write(`ovn-gwmode-agent: rollback: ${(err as Error).message}: nothing put back\n`);
      process.exitCode = 1;
      return;
    }
    try {
      await applyReplaces(dataplane, log, rb.actions, undefined, stop.requested);
    } catch (err) {
      if (!(err instanceof InterruptedError)) throw err;
      process.stdout.write(lines.join('\n') + '\n');
      const done = err.done.length === 0 ? 'nothing put back' : `put back ${prefixes(err.done)}`;
      process.stderr.write(`ovn-gwmode-agent: rollback: interrupted by ${err.signal} after ${err.done.length} of ${rb.actions.length} put-back(s): ${done}; not put back ${prefixes(err.left)}: run rollback --yes again to finish\n`);
      process.exitCode = 1;
      return;
    }
    const after = await observe(dataplane, watched, noProbe);
    const wrong = rb.actions.filter((a) => !(after.routes.get(a.key.prefix) ?? []).some((r) => sameNextHop(r.nextHop, a.to)));
    if (wrong.length > 0) throw new Error(`after replacing, not put back: ${wrong.map((a) => a.key.prefix).join(', ')}`);
    let recorded = '';
    try {
      await mark(m!, { startedAt, doneAt: systemClock.wall() });
    } catch (err) {
      recorded = ` (the journal still says the rollback is under way: ${(err as Error).message})`;
    }
    lines.push(`put back: ${rb.actions.length} route(s)${recorded}`, `next: ovnkube-node must run ${m!.mode === 'local' ? 'shared' : 'local'} gateway mode, and the mode file say so, or the agent moves them again (rollback restarts nothing)`);
    process.stdout.write(lines.join('\n') + '\n');
  } catch (err) {
    process.stderr.write(`ovn-gwmode-agent: ${(err as Error).message}\n`);
    process.exitCode = 1;
  } finally {
    dataplane.close();
  }
}
