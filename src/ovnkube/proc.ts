// Which gateway mode ovnkube-node is running, from /proc: the entry of src/ovnkube.
//  - cmdline.ts: ovnkube-node's command line (the truth: `--gateway-mode` overrides
//    ovnkube.conf, and in 4.8 ovnkube.conf always says mode=local);
//  - procfs.ts: reading /proc synchronously, comm before cmdline;
//  - scan.ts: the full scan, in our network namespace only, forked copies left out;
//  - scanner.ts: a pass woken by a route notification alone reuses the last full scan;
//  - here: what the scan says, summarised into the planner's view.
import type { GatewayMode, OvnkubeObservation } from '../core/types.js';
import type { OvnkubeProcess, OvnkubeScan } from './scan.js';

export { parseOvnkubeCmdline, RELEASE_410_FLAGS } from './cmdline.js';
export { parentOf, startTimeOf, type ProcReader } from './procfs.js';
export {
  findOvnkubeProcesses,
  MAX_COPY_AGE_MS,
  scanOvnkubeProcesses,
  type OvnkubeProcess,
  type OvnkubeScan,
  type UnreadableProcess,
} from './scan.js';
export { MAX_REUSE_AGE_MS, OvnkubeScanner } from './scanner.js';

/** What tells this process from a later one with the same pid (the signal strategy's target id too). */
export const processIdentity = (p: OvnkubeProcess): string => `pid ${p.pid} start ${p.startTime}`;

/** Summarises what /proc shows into the planner's view. */
export function summarise(scan: OvnkubeScan, confMode: GatewayMode | null): OvnkubeObservation {
  const { processes, unreadable } = scan;
  const modeOf = ({ modeFlag: m }: { modeFlag: string | null }): GatewayMode | null =>
    m === 'local' || m === 'shared' ? m : m === null ? confMode : null;
  // Evidence from any ovnkube-node that may be this node's, whatever else is unsure: a
  // 4.10+ flag, or a mode other than the desired one; either only ever turns changes off.
  const all = [...processes, ...unreadable];
  const modes = [...new Set(all.map(modeOf).filter((m) => m !== null))];
  const seen = all.find((p) => p.release410Plus !== null);
  const evidence = { modes, release410Plus: seen ? `${seen.release410Plus} (pid ${seen.pid})` : null };
  const unsure = (detail: string, p?: OvnkubeProcess) => ({
    mode: null,
    pid: p?.pid ?? null,
    id: p ? processIdentity(p) : null,
    detail,
    ...evidence,
  });
  // Any process we cannot place might be the ovnkube-node of this node: guessing
  // would act on a mode nobody checked.
  const [blind] = unreadable;
  if (blind !== undefined) {
    const pids = `pid${unreadable.length > 1 ? 's' : ''} ${unreadable.map((u) => u.pid).join(', ')}`;
    return unsure(
      `cannot read the network namespace of ovnkube ${pids} (/proc/PID/ns/net: ${blind.code}): the agent needs root or CAP_SYS_PTRACE`,
    );
  }
  if (new Set(processes.map((p) => p.modeFlag ?? confMode)).size > 1)
    return unsure(
      `ovnkube processes disagree: ${processes.map((p) => `pid ${p.pid} ${p.modeFlag ?? '(no flag)'}`).join(', ')}`,
    );
  const [p] = processes;
  if (p === undefined) return unsure('no ovnkube --init-node process in this network namespace');
  const mode = modeOf(p);
  if (mode === null)
    return unsure(
      p.modeFlag === null
        ? `pid ${p.pid} has no --gateway-mode flag and --ovnkube-config gives no [gateway] mode`
        : `pid ${p.pid} runs --gateway-mode ${p.modeFlag}`,
      p,
    );
  return { mode, pid: p.pid, id: processIdentity(p), detail: null, ...evidence };
}
