// The commands that touch the kernel (the socket clients are in ask.ts). `plan`, `apply` and
// `rollback` are one pass of the agent's pipeline (src/agent/engine.ts), each with its own target.
// Each prints what it did and what is left, and nothing it did not do (`plan` says "would
// replace"; `apply` never calls a node done while a restart of ovnkube-node its migration owes is
// still to come, and says who does it). Each returns its result; main.ts ends the process.
import type { DestinationStream, Logger } from 'pino';
import { runDaemon } from '../agent/daemon.js';
import { once, type OnceResult, type OvnkubeProbe, type Target } from '../agent/engine.js';
import { InterruptedError } from '../agent/execute.js';
import { JournalKeeper } from '../agent/journal-keeper.js';
import { systemClock } from '../clock.js';
import { lastWins, resolvePlanSettings, resolveSettings, type PlanSettings } from '../config/settings.js';
import type { RawPlanOptions, RawRunOptions } from '../config/settings.js';
import { summarize } from '../core/decide.js';
import type { Migration } from '../core/migration.js';
import { must } from '../core/must.js';
import { renderNextHop } from '../core/route.js';
import type { Plan, ReplaceAction } from '../core/types.js';
import { KernelDataplane } from '../dataplane/kernel.js';
import type { Dataplane } from '../dataplane/types.js';
import { readModeSource } from '../mode/source.js';
import { OvnkubeScanner, summarise } from '../ovnkube/proc.js';
import { requireModule } from '../require.js';
import { readBootId } from '../restart/journal-time.js';
import { Journal } from '../restart/journal.js';
import { systemdNotifier, watchdogUsec } from '../systemd/supervisor.js';
import { failure, failureOf, type CommandResult, type ExitCode } from './exit-codes.js';
import { assertStateDirWritable, lockStateDir } from './lock.js';

const { pino } = requireModule('pino') as typeof import('pino');

/** JSON logs for the node's log collector. */
const LOGS = { base: { agent: 'ovn-gwmode-agent' }, timestamp: pino.stdTimeFunctions.isoTime };
const createLogger = (level: string, to: NodeJS.WritableStream = process.stdout): Logger =>
  pino({ level, ...LOGS }, to as DestinationStream);

/**
 * SIGTERM and SIGINT during `apply` or `rollback --yes`. Before the first change (for `apply`, the
 * journal write before its first replace) the command is abandoned: exit 1, nothing changed, and
 * beginChanges refuses the work left behind. After it, the change in flight finishes with its
 * journal record, none is begun, and the command says what was and was not done.
 */
function interruption(what: string) {
  let signal: string | null = null;
  let changing = false;
  const abandoned = new Promise<CommandResult>((abandon) => {
    for (const sig of ['SIGTERM', 'SIGINT'] as const)
      process.on(sig, () => {
        signal ??= sig;
        const stderr = `ovn-gwmode-agent: ${what}: interrupted by ${sig} before any change; nothing changed\n`;
        if (!changing) abandon({ code: 1, stderr });
      });
  });
  // What the engine asks of a pass that acts (agent/execute.ts's Effects), and the race with the abandonment.
  return {
    run: (work: () => Promise<CommandResult>) => Promise.race([work(), abandoned]),
    act: true,
    beginChanges: (): void => {
      if (signal !== null && !changing) throw new Error(`${what}: abandoned on ${signal} before any change`);
      changing = true;
    },
    stopRequested: () => signal,
  };
}

/** A lock or check refused as a result (failure's notes), or null when it passed. */
const refusal = (check: Promise<void>, notes: Parameters<typeof failure>[1]) =>
  check.then(() => null).catch((err: unknown) => failure(err, notes));

/** /proc is read whatever --ovnkube-mode-check says: the process's identity proves a restart. */
function ovnkubeProbe(s: PlanSettings): OvnkubeProbe {
  const scanner = new OvnkubeScanner();
  return async (hint) => summarise(scanner.scan(hint?.routeEventOnly ?? false), s.ovnkubeConfMode);
}

/** What a test may wrap around the real parts (fault injection). */
export interface RunWrappers {
  dataplane?: (real: Dataplane) => Dataplane;
  journal?: (dir: string) => Journal;
}

const SERVING = 'not starting a second agent';

/** `run`: the agent, until it stops (exit 0 on SIGTERM) or refuses to start. */
export async function runCommand(raw: RawRunOptions, wrap: RunWrappers = {}): Promise<CommandResult> {
  const settings = await resolveSettings(raw);
  const refused = await refusal(lockStateDir(settings.stateDir), { held: SERVING });
  if (refused) return refused;
  const log = createLogger(settings.logLevel);
  const real = new KernelDataplane();
  const dataplane = wrap.dataplane?.(real) ?? real;
  return new Promise<CommandResult>((resolve) => {
    // A bug must not leave a half-working agent: exit, and the supervisor starts a clean one.
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
      plannerConfig: (s) => s,
      probeFor: ovnkubeProbe,
      clock: systemClock,
      exit: (code) => resolve({ code: code === 0 ? 0 : 1 }),
    }).catch((err: unknown) => {
      dataplane.close();
      const refused = failureOf(err, { held: SERVING });
      if (refused === null) fatal(err);
      else resolve(refused);
    });
  });
}

export type PlanOptions = RawPlanOptions & { json?: boolean; dryRun?: boolean; stateDir: string };

export type OnceWrappers = Pick<RunWrappers, 'dataplane'>;

/** The desired mode as the mode file says it, with where it came from. */
async function readDesired(modeFile: string, log: Logger) {
  const read = await readModeSource(modeFile);
  const detail = read.mode !== null ? (read.detail ?? null) : null;
  if (detail)
    log.warn({ path: modeFile, mode: read.mode, detail }, 'desired mode read as the cluster network operator reads it');
  return { mode: read.mode, source: { path: modeFile, error: read.error, detail } };
}

const converged = (p: Plan): ExitCode =>
  summarize(p, { phase: null, reason: null }, new Map(), null).phase === 'Converged' ? 0 : 1;

/** `restartOwed`: what owedRestart says; `journalError`: why `plan` could not read the journal. */
const asJson = (p: Plan, applied: number, restartOwed: string | null, journalError: string | null = null) => {
  const reasons = { reasonCodes: p.reasons.map((r) => r.code), reasons: p.reasons.map((r) => r.message) };
  const actions = p.actions.map((a) => ({ ...a, reason: a.reason.message }));
  return JSON.stringify({ ...p, ...reasons, actions, applied, restartOwed, journalError }, null, 2) + '\n';
};

/** The node's journal as the agent keeps it (agent/journal-keeper.ts), not read yet. */
const journalOf = (stateDir: string, log: Logger) =>
  new JournalKeeper({ journal: new Journal(stateDir), clock: systemClock, bootId: readBootId(), log });

/** One pass of a one-shot command: it acts only with an interruption. */
type PassDeps = { log: Logger; journal: JournalKeeper } & Partial<ReturnType<typeof interruption>>;
async function pass(settings: PlanSettings, target: Target, wrap: OnceWrappers, deps: PassDeps): Promise<OnceResult> {
  const real = new KernelDataplane();
  const dataplane = wrap.dataplane?.(real) ?? real;
  try {
    return await once(
      { dataplane, probe: ovnkubeProbe(settings), clock: systemClock, act: false, ...deps },
      settings,
      target,
    );
  } finally {
    dataplane.close();
  }
}

/** The restart of ovnkube-node left to the agent (the engine's restartLeft), or null. */
function owedRestart(m: Migration | null, stateDir: string, apply = false): string | null {
  if (m === null) return null;
  const not = apply ? 'apply does not restart it; ' : '';
  return `restart ovnkube-node into ${m.mode} gateway mode, owed by the migration journaled in ${stateDir}: ${not}the agent sees to it when it runs (a new ovnkube-node running ${m.mode} gateway mode completes it)`;
}

/**
 * `plan`, and `apply --dry-run`: observe once, the journal too, and print what would be done (a restart
 * a migration owes included); no lock, no change: a journal it cannot read is only reported.
 */
export async function planCommand(raw: PlanOptions, wrap: OnceWrappers = {}, dryRun = false): Promise<CommandResult> {
  const settings = { ...(await resolvePlanSettings(raw)), dryRun };
  const log = createLogger(settings.logLevel === 'info' ? 'warn' : settings.logLevel, process.stderr);
  const desired = await readDesired(settings.modeFile, log);
  const { stateDir } = lastWins(raw);
  const journal = journalOf(stateDir, log);
  // Not to this user (EACCES), or corrupt: only the latter is set aside by the agent.
  const unread = await journal.load(true).then(
    () => null,
    (err: Error) =>
      `the journal cannot be read (${err.message})${(err.cause as NodeJS.ErrnoException | undefined)?.code === 'EACCES' ? ': run this as root' : ': the agent sets it aside when it runs'}`,
  );
  try {
    const r = await pass(settings, { mode: desired }, wrap, { log, journal });
    const p = must(r.planned, 'the plan');
    const owed = owedRestart(r.restartLeft, stateDir);
    const code = owed === null ? converged(p) : 1;
    if (raw.json) return { code, stdout: asJson(p, 0, owed, unread) };
    const lines = renderPlanBody(p, null);
    const would = p.actions.length === 0 ? 'nothing to replace' : `would replace ${prefixes(p.actions)}`;
    if (dryRun) lines.push(`applied: 0 replace(s) (dry run): ${would}; changed nothing`);
    else {
      const next = p.actions.length > 0 && !p.blocked ? ' (apply carries it out, or the agent)' : '';
      lines.push(`plan: ${would}; changed nothing${next}`);
    }
    if (owed !== null) lines.push(`left: ${owed}`);
    if (unread !== null) lines.push(`warning: ${unread}`);
    return { code, stdout: lines.join('\n') + '\n' };
  } catch (err) {
    return { code: 1, stderr: `ovn-gwmode-agent: ${(err as Error).message}\n` };
  }
}

/**
 * `apply`: one pass that acts, under the agent lock. Its migration is journaled before the
 * first replace, as the agent's is: `rollback` undoes it, and an agent started after it (even
 * after an apply killed midway) finishes it. With --dry-run it is a plan that says so.
 */
export function applyCommand(raw: PlanOptions, wrap: OnceWrappers = {}): Promise<CommandResult> {
  const { dryRun, stateDir } = lastWins(raw);
  if (dryRun === true) return planCommand(raw, wrap, true);
  const stop = interruption('apply');
  return stop.run(async () => {
    const settings = await resolvePlanSettings(raw);
    const held = 'apply does not act beside a running agent: stop it, or leave the work to it';
    const refused =
      (await refusal(lockStateDir(stateDir), { held })) ??
      (await refusal(assertStateDirWritable(stateDir), { what: 'apply' }));
    if (refused) return refused;
    const log = createLogger(settings.logLevel, process.stderr);
    const journal = journalOf(stateDir, log);
    if (!(await journal.load()))
      return { code: 2, stderr: `ovn-gwmode-agent: apply: ${journal.warning}; changing nothing\n` };
    const desired = await readDesired(settings.modeFile, log);
    try {
      const r = await pass(settings, { mode: desired }, wrap, { log, journal, ...stop });
      const final = must(r.final, "apply's verified plan");
      const replaced = r.applied ? r.actions : [];
      const code = converged(final);
      // What is left: a restart this migration owes is the agent's to request; apply restarts nothing.
      const owed = owedRestart(r.restartLeft, stateDir, true);
      if (raw.json) return { code, stdout: asJson(final, replaced.length, owed) };
      const left = owed
        ? `left: ${owed}`
        : code === 0
          ? 'left: nothing'
          : 'left: the node is not converged: see the reasons';
      const lines = [...renderPlanBody(final, replaced), `applied: ${replaced.length} replace(s)`, left];
      return { code, stdout: lines.join('\n') + '\n' };
    } catch (err) {
      // The migration taken off the record again (nothing of it was carried out), but not on disk.
      const kept = journal.lag
        ? `; the journal still records the migration to ${desired.mode} (${journal.lag.error}): an agent started next finds its routes already as they are`
        : '';
      if (!(err instanceof InterruptedError))
        return { code: 1, stderr: `ovn-gwmode-agent: ${(err as Error).message}${kept}\n` };
      const line =
        err.done.length === 0
          ? `apply: interrupted by ${err.signal} before the first replace; nothing changed${kept}`
          : `apply: interrupted by ${err.signal} after ${err.done.length} of ${err.done.length + err.left.length} replace(s): replaced ${prefixes(err.done)}; not replaced ${prefixes(err.left)}; ` +
            `the journal records the migration to ${desired.mode}: the agent completes it when it runs, \`rollback --yes\` puts back what was replaced`;
      return { code: 1, stderr: `ovn-gwmode-agent: ${line}\n` };
    }
  });
}

export type RollbackOptions = Omit<PlanOptions, 'modeFile' | 'json'> & { yes: boolean };

/**
 * `rollback`: the same pass with the journal's migration put back as its target (core/rollback.ts
 * decides). Without --yes it changes nothing; with it, under the node's lock, all or none, verified.
 */
export function rollbackCommand(raw: RollbackOptions, wrap: OnceWrappers = {}): Promise<CommandResult> {
  const stop = interruption('rollback');
  return stop.run(async () => {
    const given = lastWins(raw);
    // The desired mode plays no part: a placeholder satisfies the planner's settings.
    const placeholder = { modeFile: '(not read by rollback)' };
    const settings = await resolvePlanSettings({ ...given, ...placeholder });
    const held = 'rollback does not act beside a running agent: stop it first';
    const refused = given.yes ? await refusal(lockStateDir(given.stateDir), { held }) : null;
    if (refused) return refused;
    const log = createLogger(settings.logLevel, process.stderr);
    const journal = journalOf(given.stateDir, log);
    const cidrsFrom = given.serviceCidr?.length ? '--service-cidr' : `--ovnkube-config's service-cidrs`;
    let r: OnceResult;
    let before: Migration | null = null;
    const said = (code: ExitCode, more: string[], error?: string): CommandResult => ({
      code,
      stdout: renderRollback(before, journal.wallOffset(), more),
      ...(error === undefined ? {} : { stderr: `ovn-gwmode-agent: rollback: ${error}\n` }),
    });
    try {
      await journal.load(true);
      before = journal.data.migration;
      r = await pass(settings, { rollback: { cidrsFrom } }, wrap, { log, journal, ...(given.yes ? stop : {}) });
    } catch (err) {
      if (err instanceof InterruptedError) {
        const { signal, done, left } = err;
        const back = done.length === 0 ? 'nothing put back' : `put back ${prefixes(done)}`;
        return said(
          1,
          [],
          `interrupted by ${signal} after ${done.length} of ${done.length + left.length} put-back(s): ${back}; not put back ${prefixes(left)}: run rollback --yes again to finish`,
        );
      }
      // The write before the first put-back failed: nothing was put back.
      if ((err as { code?: string }).code === 'ERR_GWMODE_JOURNAL_WRITE')
        return said(1, [], `${(err as Error).message}: nothing put back`);
      return failureOf(err) ?? { code: 1, stderr: `ovn-gwmode-agent: ${(err as Error).message}\n` };
    }
    const { actions, refusals } = r;
    const nothing = refusals.find((x) => x.code === 'NothingToRollBack');
    if (nothing) return said(0, ['nothing to roll back:', `  - ${nothing.message} [${nothing.code}]`]);
    if (refusals.length > 0) return said(1, ['refused:', ...refusals.map((x) => `  - ${x.message} [${x.code}]`)]);
    if (!r.applied)
      return said(0, [...rollbackActions(actions), 'nothing changed: run again with --yes to carry it out']);
    const unrecorded = journal.lag ? ` (the journal still says the rollback is under way: ${journal.lag.error})` : '';
    const other = must(before, 'the migration put back').mode === 'local' ? 'shared' : 'local';
    return said(0, [
      ...rollbackActions(actions),
      `put back: ${actions.length} route(s)${unrecorded}`,
      `next: ovnkube-node must run ${other} gateway mode, and the mode file say so, or the agent moves them again (rollback restarts nothing)`,
    ]);
  });
}

const change = (a: ReplaceAction) => `${a.key.prefix}: ${renderNextHop(a.from)} -> ${renderNextHop(a.to)}`;
const prefixes = (actions: ReplaceAction[]): string => actions.map((a) => a.key.prefix).join(', ');

/**
 * The plan as seen: `replaced` by `apply`, or null for a preview, which leaves out the Replacing
 * reasons: its "would replace" lines say it, and none is under way.
 */
function renderPlanBody(p: Plan, replaced: ReplaceAction[] | null): string[] {
  const lines = [`layout: ${p.layout}`, `release: ${p.platform.release} (${p.platform.evidence})`];
  const [heading, actions] = replaced?.length ? ['replaced', replaced] : ['actions', p.actions];
  if (actions.length === 0) lines.push(`${heading}: none`);
  else lines.push(`${heading}:`, ...actions.map((a) => `  ${replaced ? '' : 'would replace '}${change(a)}`));
  const seen = (r: Plan['routes'][number]) =>
    r.multipath ? 'multipath (several next hops)' : r.observed ? renderNextHop(r.observed) : 'none';
  lines.push('routes:', ...p.routes.map((r) => `  ${r.inSync ? 'ok' : 'NO'} ${r.cidr}: ${seen(r)}`));
  const reasons = replaced ? p.reasons : p.reasons.filter((r) => r.code !== 'Replacing');
  if (reasons.length) lines.push('reasons:', ...reasons.map((r) => `  - ${r.message} [${r.code}]`));
  if (p.warnings.length) lines.push('warnings:', ...p.warnings.map((w) => `  - ${w}`));
  return lines;
}

/** `rollback`: the migration on record (its times monotonic plus wallOffsetMs), then `more`. */
function renderRollback(m: Migration | null, wallOffsetMs: number, more: string[]): string {
  const at = (t: number) => new Date(t + wallOffsetMs).toISOString();
  const earlier = !m?.rollback
    ? ''
    : m.rollback.doneAt !== null
      ? `; rolled back at ${at(m.rollback.doneAt)}`
      : `; a rollback begun at ${at(m.rollback.startedAt)} did not finish`;
  const heading =
    m === null
      ? 'migration: none on record'
      : `migration: to ${m.mode}, started ${at(m.startedAt)}, ${m.routes.length} route(s) replaced${earlier}`;
  return [heading, ...more].join('\n') + '\n';
}

const rollbackActions = (actions: ReplaceAction[]) => ['actions:', ...actions.map((a) => `  replace ${change(a)}`)];
