// What `plan`, `apply` and `rollback` print. Each says what the command did and what is
// left, and nothing it did not do: `plan` never says a route is being replaced (it says
// "would replace" and "changed nothing"), and `apply` never calls a node done while the
// restart of ovnkube-node its migration owes is still to come; it says who does it.
import type { Migration } from '../core/migration.js';
import { renderNextHop } from '../core/route.js';
import type { GatewayMode, Plan, ReplaceAction } from '../core/types.js';
import type { RollbackOutcome } from '../rollback/run.js';

const change = (a: ReplaceAction) => `${a.key.prefix}: ${renderNextHop(a.from)} -> ${renderNextHop(a.to)}`;
export const prefixes = (actions: ReplaceAction[]): string => actions.map((a) => a.key.prefix).join(', ');

/**
 * The plan as seen: layout, release, the replaces under `heading` (or none), each route,
 * the reasons and the warnings. A preview leaves out the planner's Replacing reasons:
 * its "would replace" lines say the same, and no replace is under way.
 */
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
  m !== null &&
  m.mode === desired &&
  !m.rollback &&
  (m.restart === 'owed' || m.restart === 'requested' || m.restart === 'failed');

/**
 * `apply`: the node after it, what it replaced, and what is left: the restart of
 * ovnkube-node that the migration on record owes, which apply never makes (the agent
 * requests it when it runs), or what keeps the node from converging.
 */
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

/** `rollback`: the migration on record, then what was (or would be) put back, and what is left. */
export function renderRollback(o: RollbackOutcome): { stdout: string; stderr?: string } {
  const m = o.migration;
  const earlier = !m?.rollback
    ? ''
    : m.rollback.doneAt !== null
      ? `; rolled back at ${new Date(m.rollback.doneAt).toISOString()}`
      : `; a rollback begun at ${new Date(m.rollback.startedAt).toISOString()} did not finish`;
  const lines = [
    m === null
      ? 'migration: none on record'
      : `migration: to ${m.mode}, started ${new Date(m.startedAt).toISOString()}, ${m.routes.length} route(s) replaced${earlier}`,
  ];
  if (o.kind === 'refused') {
    lines.push('refused:', ...o.refusals.map((r) => `  - ${r.message} [${r.code}]`));
    return { stdout: lines.join('\n') + '\n' };
  }
  if (o.kind === 'nothing')
    return { stdout: [...lines, 'nothing to roll back:', `  - ${o.why.message} [${o.why.code}]`].join('\n') + '\n' };
  lines.push('actions:', ...o.actions.map((a) => `  replace ${change(a)}`));
  switch (o.kind) {
    case 'planned':
      return { stdout: [...lines, 'nothing changed: run again with --yes to carry it out'].join('\n') + '\n' };
    case 'not-journaled':
      return {
        stdout: lines.join('\n') + '\n',
        stderr: `ovn-gwmode-agent: rollback: ${o.error.message}: nothing put back\n`,
      };
    case 'interrupted': {
      const done = o.done.length === 0 ? 'nothing put back' : `put back ${prefixes(o.done)}`;
      return {
        stdout: lines.join('\n') + '\n',
        stderr: `ovn-gwmode-agent: rollback: interrupted by ${o.signal} after ${o.done.length} of ${o.actions.length} put-back(s): ${done}; not put back ${prefixes(o.left)}: run rollback --yes again to finish\n`,
      };
    }
    case 'done': {
      const recorded =
        o.unrecorded === null ? '' : ` (the journal still says the rollback is under way: ${o.unrecorded.message})`;
      lines.push(
        `put back: ${o.actions.length} route(s)${recorded}`,
        `next: ovnkube-node must run ${m!.mode === 'local' ? 'shared' : 'local'} gateway mode, and the mode file say so, or the agent moves them again (rollback restarts nothing)`,
      );
      return { stdout: lines.join('\n') + '\n' };
    }
  }
}
