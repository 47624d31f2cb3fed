// What `plan`, `apply` and `rollback` print: what the command did and what is left, and nothing
// it did not do (`plan` says "would replace"; `apply` never calls a node done while a restart of
// ovnkube-node its migration owes is still to come, and says who does it).
import { restartOwed, type Migration } from '../core/migration.js';
import { renderNextHop } from '../core/route.js';
import type { GatewayMode, Plan, ReplaceAction } from '../core/types.js';

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

/** A restart is owed by this migration and the mode file still asks for its mode (else the agent moves on: core/decide.ts). */
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

/** `rollback`: the migration on record (its times monotonic plus wallOffsetMs), then `more`. */
export function renderRollback(m: Migration | null, wallOffsetMs: number, more: string[] = []): string {
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

export const rollbackActions = (actions: ReplaceAction[]) => [
  'actions:',
  ...actions.map((a) => `  replace ${change(a)}`),
];
