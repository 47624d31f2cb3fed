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
  // 4.10+ evidence from any ovnkube-node that may be this node's, whatever else is unsure:
  // it only ever turns changes off.
  const seen = [...processes, ...unreadable].find((p) => p.release410Plus !== null);
  const release410Plus = seen ? `${seen.release410Plus} (pid ${seen.pid})` : null;
  // Any process we cannot place might be the ovnkube-node of this node: guessing
  // would act on a mode nobody checked.
  const [blind] = unreadable;
  if (blind !== undefined) {
    const pids = `pid${unreadable.length > 1 ? 's' : ''} ${unreadable.map((u) => u.pid).join(', ')}`;
    return {
      mode: null,
      pid: null,
      id: null,
      detail: `cannot read the network namespace of ovnkube ${pids} (/proc/PID/ns/net: ${blind.code}): the agent needs root or CAP_SYS_PTRACE`,
      release410Plus,
    };
  }
  const [p] = processes;
  if (p === undefined) {
    return {
      mode: null,
      pid: null,
      id: null,
      detail: 'no ovnkube --init-node process in this network namespace',
      release410Plus,
    };
  }
  const modes = new Set(processes.map((p) => p.modeFlag ?? confMode));
  if (modes.size > 1) {
    return {
      mode: null,
      pid: null,
      id: null,
      detail: `ovnkube processes disagree: ${processes.map((p) => `pid ${p.pid} ${p.modeFlag ?? '(no flag)'}`).join(', ')}`,
      release410Plus,
    };
  }
  const id = processIdentity(p);
  const mode = p.mode ?? (p.modeFlag === null ? confMode : null);
  if (mode === null) {
    return {
      mode: null,
      pid: p.pid,
      id,
      detail:
        p.modeFlag === null
          ? `pid ${p.pid} has no --gateway-mode flag and --ovnkube-config gives no [gateway] mode`
          : `pid ${p.pid} runs --gateway-mode ${p.modeFlag}`,
      release410Plus,
    };
  }
  return { mode, pid: p.pid, id, detail: null, release410Plus };
}
