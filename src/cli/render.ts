// What `plan`, `apply` and `rollback` print. Each says what the command did and what is
// left, and nothing it did not do: `plan` never says a route is being replaced (it says
// "would replace" and "changed nothing"), and `apply` never calls a node done while the
// restart of ovnkube-node its migration owes is still to come; it says who does it.
import { restartOwed, type Migration } from '../core/migration.js';
import type { Reason } from '../core/reasons.js';
import { renderNextHop } from '../core/route.js';
import type { GatewayMode, Plan, ReplaceAction } from '../core/types.js';
import { must } from '../core/must.js';

/** What `rollback` did, with the migration on record before it. */
export type RollbackOutcome = { migration: Migration | null } & (
  | { kind: 'refused'; refusals: Reason[] }
  /** Nothing on record to put back (NothingToRollBack): nothing to do. */
  | { kind: 'nothing'; why: Reason }
  | { kind: 'planned'; actions: ReplaceAction[] }
  /** The rollback could not be journaled: nothing put back. */
  | { kind: 'not-journaled'; error: Error }
  | { kind: 'interrupted'; signal: string; done: ReplaceAction[]; left: ReplaceAction[] }
  /** unrecorded: why the journal still says the rollback is under way, or null. */
  | { kind: 'done'; actions: ReplaceAction[]; unrecorded: string | null }
);

const change = (a: ReplaceAction) => `${a.key.prefix}: ${renderNextHop(a.from)} -> ${renderNextHop(a.to)}`;
export const prefixes = (actions: ReplaceAction[]): string => actions.map((a) => a.key.prefix).join(', ');

/** The plan as seen. A preview leaves out the Replacing reasons: its "would replace" lines say it, and none is under way. */
function renderPlanBody(p: Plan, heading: string, actions: ReplaceAction[], preview: boolean): string[] {
  const lines = [`layout: ${p.layout}`, `release: ${p.platform.release} (${p.platform.evidence})`];
  if (actions.length === 0) lines.push(`${heading}: none`);
  else lines.push(`${heading}:`, ...actions.map((a) => `  ${preview ? 'would replace ' : ''}${change(a)}`));
  lines.push(
    'routes:',
    ...p.routes.map(
      (r) =>
        `  ${r.inSync ? 'ok' : 'NO'} ${r.cidr}: ${r.multipath ? 'multipath (several next hops)' : r.observed ? renderNextHop(r.observed) : 'none'}`,
    ),
  );
  const reasons = preview ? p.reasons.filter((r) => r.code !== 'Replacing') : p.reasons;
  if (reasons.length) lines.push('reasons:', ...reasons.map((r) => `  - ${r.message} [${r.code}]`));
  if (p.warnings.length) lines.push('warnings:', ...p.warnings.map((w) => `  - ${w}`));
  return lines;
}

/** `plan`, and `apply --dry-run`: what would be done; nothing was. */
export function renderPreview(p: Plan, dryRunApply: boolean): string {
  const lines = renderPlanBody(p, 'actions', p.actions, true);
  const would = p.actions.length === 0 ? 'nothing to replace' : `would replace ${prefixes(p.actions)}`;
  if (dryRunApply) lines.push(`applied: 0 replace(s) (dry run): ${would}; changed nothing`);
  else
    lines.push(
      `plan: ${would}; changed nothing${p.actions.length > 0 && !p.blocked ? ' (apply carries it out, or the agent)' : ''}`,
    );
  return lines.join('\n');
}

/**
 * A restart of ovnkube-node is still owed by this migration (not rolled back, not restarted
 * yet) and the mode file still asks for its mode: a migration to the other mode is moved on
 * by the agent once the node is in the desired shape (src/core/decide.ts), owing nothing.
 */
const owesRestart = (m: Migration | null, desired: GatewayMode | null): m is Migration =>
  m !== null && m.mode === desired && !m.rollback && restartOwed(m);

/** `apply`: the node after it, what it replaced, and what is left (a restart owed is the agent's to request). */
export function renderApplied(
  after: Plan,
  replaced: ReplaceAction[],
  onRecord: Migration | null,
  desired: GatewayMode | null,
  stateDir: string,
  converged: boolean,
): string {
  const lines = renderPlanBody(
    after,
    replaced.length > 0 ? 'replaced' : 'actions',
    replaced.length > 0 ? replaced : after.actions,
    false,
  );
  lines.push(`applied: ${replaced.length} replace(s)`);
  if (owesRestart(onRecord, desired)) {
    lines.push(
      `left: restart ovnkube-node into ${onRecord.mode} gateway mode, owed by the migration journaled in ${stateDir}: apply does not restart it; the agent requests it when it runs, unless a new ovnkube-node runs ${onRecord.mode} gateway mode by then`,
    );
  } else lines.push(converged ? 'left: nothing' : 'left: the node is not converged: see the reasons');
  return lines.join('\n');
}

/** `rollback`: the migration on record, then what was (or would be) put back, and what is left; times are monotonic plus wallOffsetMs. */
export function renderRollback(o: RollbackOutcome, wallOffsetMs: number): { stdout: string; stderr?: string } {
  const m = o.migration;
  const at = (t: number) => new Date(t + wallOffsetMs).toISOString();
  const earlier = !m?.rollback
    ? ''
    : m.rollback.doneAt !== null
      ? `; rolled back at ${at(m.rollback.doneAt)}`
      : `; a rollback begun at ${at(m.rollback.startedAt)} did not finish`;
  const lines = [
    m === null
      ? 'migration: none on record'
      : `migration: to ${m.mode}, started ${at(m.startedAt)}, ${m.routes.length} route(s) replaced${earlier}`,
  ];
  const out = (more: string[]) => [...lines, ...more].join('\n') + '\n';
  switch (o.kind) {
    case 'refused':
      return { stdout: out(['refused:', ...o.refusals.map((r) => `  - ${r.message} [${r.code}]`)]) };
    case 'nothing':
      return { stdout: out(['nothing to roll back:', `  - ${o.why.message} [${o.why.code}]`]) };
    case 'planned':
      return {
        stdout: out([
          'actions:',
          ...o.actions.map((a) => `  replace ${change(a)}`),
          'nothing changed: run again with --yes to carry it out',
        ]),
      };
    case 'not-journaled':
      return { stdout: out([]), stderr: `ovn-gwmode-agent: rollback: ${o.error.message}: nothing put back\n` };
    case 'interrupted': {
      const done = o.done.length === 0 ? 'nothing put back' : `put back ${prefixes(o.done)}`;
      const all = o.done.length + o.left.length;
      return {
        stdout: out([]),
        stderr: `ovn-gwmode-agent: rollback: interrupted by ${o.signal} after ${o.done.length} of ${all} put-back(s): ${done}; not put back ${prefixes(o.left)}: run rollback --yes again to finish\n`,
      };
    }
    case 'done': {
      const recorded =
        o.unrecorded === null ? '' : ` (the journal still says the rollback is under way: ${o.unrecorded})`;
      return {
        stdout: out([
          'actions:',
          ...o.actions.map((a) => `  replace ${change(a)}`),
          `put back: ${o.actions.length} route(s)${recorded}`,
          `next: ovnkube-node must run ${must(m, 'the migration put back').mode === 'local' ? 'shared' : 'local'} gateway mode, and the mode file say so, or the agent moves them again (rollback restarts nothing)`,
        ]),
      };
    }
  }
}
