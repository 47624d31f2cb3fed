// The full scan of /proc for ovnkube --init-node processes. Only processes in the agent's
// own network namespace count (with hostPID or `ip netns exec`, processes of other
// namespaces are visible in /proc too).
//
// A process that ovnkube-node has forked and that has not yet exec'd is, for that moment,
// a copy of it in /proc: comm `ovnkube`, the same command line, the same namespace. The
// real one (Go) forks for every ovs-vsctl, iptables or ip it runs; the tests' stand-in
// (a shell) for each command it starts. Such a copy is not a second ovnkube-node: a
// process whose parent was found by the same scan, whose command line is byte for byte
// its parent's, and which started at most MAX_COPY_AGE_MS ago (a fork execs within
// microseconds to milliseconds) is left out (forkedCopies). Counted, it would make the
// signal strategy find "2 processes" and give up that attempt, or, first in readdir's
// order after a PID wrap, be taken for ovnkube-node itself and make a restart look done.
// Everything else counts: a child with another command line (an ovnkube that runs
// ovnkube with other arguments), a copy whose parent has exited (reparented) or was not
// found, and a copy older than that, stuck before its exec or an ovnkube that runs itself
// again with the same arguments: doubt is a second process. A copy left out is not
// remembered as looked at, so a reuse (scanner.ts) reads its comm again and scans in full
// while it still says ovnkube (it may exec an ovnkube of another mode).
import { readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import type { GatewayMode } from '../core/types.js';
import { parseOvnkubeCmdline } from './cmdline.js';
import {
  commIsOvnkube,
  isPid,
  namedOvnkube,
  parentOf,
  readProcFile,
  startTimeOf,
  USER_HZ,
  uptimeTicks,
  type ProcReader,
} from './procfs.js';

export interface OvnkubeProcess {
  pid: number;
  /** Field 22 of /proc/PID/stat: start time in clock ticks since boot; tells a reused PID apart. */
  startTime: string;
  mode: GatewayMode | null;
  modeFlag: string | null;
  /** The first of RELEASE_410_FLAGS on its command line, or null. */
  release410Plus: string | null;
}

interface Found {
  process: OvnkubeProcess;
  ppid: number | null;
  /** A copy of its command line as read. */
  cmdline: Buffer;
}

/** The oldest a fork may be, not yet exec'd, and still be taken for a copy of its parent (header). */
export const MAX_COPY_AGE_MS = 2000;

/**
 * The PIDs among `found` that are forked copies of another found process (header): the
 * parent is in `found`, the command lines are equal byte for byte, and it started at
 * most MAX_COPY_AGE_MS ago by /proc/uptime (`now`, read only if there is a candidate).
 */
function forkedCopies(found: Found[], now: () => number | null): Set<number> {
  const byPid = new Map(found.map((f) => [f.process.pid, f]));
  const copies = new Set<number>();
  let ticks: number | null | undefined;
  for (const f of found) {
    const parent = f.ppid === null || f.ppid === f.process.pid ? undefined : byPid.get(f.ppid);
    if (!parent || !parent.cmdline.equals(f.cmdline)) continue;
    if (ticks === undefined) ticks = now();
    const started = Number(f.process.startTime);
    if (ticks === null || !Number.isSafeInteger(started)) continue;
    if (((ticks - started) * 1000) / USER_HZ <= MAX_COPY_AGE_MS) copies.add(f.process.pid);
  }
  return copies;
}

/** An ovnkube --init-node process whose network namespace we may not read. */
export interface UnreadableProcess {
  pid: number;
  code: string;
  /** As OvnkubeProcess's: it may be this node's ovnkube-node, and this evidence can only turn changes off. */
  modeFlag: string | null;
  release410Plus: string | null;
}

export interface OvnkubeScan {
  processes: OvnkubeProcess[];
  unreadable: UnreadableProcess[];
}

/**
 * The ovnkube --init-node processes of our network namespace, and those whose
 * namespace /proc refuses to show: reading /proc/PID/ns/net of another user's process
 * takes the kernel's ptrace access check (root, or CAP_SYS_PTRACE), and a refusal
 * says nothing about where the process runs.
 */
export async function scanOvnkubeProcesses(procRoot = '/proc', read: ProcReader = readProcFile): Promise<OvnkubeScan> {
  return scanOvnkubeProcessesSync(procRoot, read, new Set());
}

/** Scans every process; `seen` gets every PID looked at but the copies left out, `cmdlines` a copy of each found ovnkube's command line. */
export function scanOvnkubeProcessesSync(
  procRoot: string,
  read: ProcReader,
  seen: Set<string>,
  cmdlines?: Map<number, Buffer>,
): OvnkubeScan {
  const ownNet = readlinkSync(path.join(procRoot, 'self', 'ns', 'net'));
  const scan: OvnkubeScan = { processes: [], unreadable: [] };
  const found: Found[] = [];
  for (const entry of readdirSync(procRoot)) {
    if (!isPid(entry)) continue;
    seen.add(entry);
    const dir = `${procRoot}/${entry}`;
    try {
      if (!commIsOvnkube(read(`${dir}/comm`))) continue;
      const raw = read(`${dir}/cmdline`);
      if (!namedOvnkube(raw)) continue;
      const argv = raw
        .toString('utf8')
        .split('\0')
        .filter((a, i, all) => a !== '' || i < all.length - 1);
      const parsed = parseOvnkubeCmdline(argv);
      if (!parsed) continue;
      // A copy: the next read reuses the buffer.
      const cmdline = Buffer.from(raw);
      let net: string;
      try {
        net = readlinkSync(path.join(dir, 'ns', 'net'));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EACCES' || code === 'EPERM') {
          scan.unreadable.push({ pid: Number(entry), code, ...parsed });
          continue;
        }
        throw err;
      }
      if (net !== ownNet) continue;
      const stat = read(path.join(dir, 'stat')).toString('utf8');
      const startTime = startTimeOf(stat);
      if (startTime === null) continue;
      const m = parsed.modeFlag;
      const mode = m === 'local' || m === 'shared' ? m : null;
      found.push({
        process: { pid: Number(entry), startTime, modeFlag: m, mode, release410Plus: parsed.release410Plus },
        ppid: parentOf(stat),
        cmdline,
      });
    } catch {
      // The process exited while we looked: skip it.
    }
  }
  const copies = forkedCopies(found, () => uptimeTicks(procRoot, read));
  for (const f of found) {
    if (copies.has(f.process.pid)) {
      seen.delete(String(f.process.pid));
      continue;
    }
    scan.processes.push(f.process);
    cmdlines?.set(f.process.pid, f.cmdline);
  }
  return scan;
}

export async function findOvnkubeProcesses(procRoot = '/proc'): Promise<OvnkubeProcess[]> {
  return (await scanOvnkubeProcesses(procRoot)).processes;
}
