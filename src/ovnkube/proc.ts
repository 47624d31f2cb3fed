// Which gateway mode ovnkube-node runs: its command line (`--gateway-mode` overrides ovnkube.conf,
// which in 4.8 always says mode=local), from a scan of the processes of our network namespace
// (hostPID and `ip netns exec` show other namespaces' processes too).
//
// /proc is read synchronously into one buffer kept for the life of the process: the scan runs
// between a route notification and its repair, and through the thread pool each file was a round
// trip and a 64 KiB allocation. Only /proc/PID/comm is read for every process: reading
// /proc/PID/cmdline takes the target's mmap lock, and one process stuck in D state holding it
// would freeze the event loop. The kernel sets comm at exec to the file's name: `exec
// /usr/bin/ovnkube --init-node ...` reads `ovnkube` (so does the tests' stand-in, /bin/sh copied).
//
// A fork of ovnkube-node not yet exec'd (Go forks for every ovs-vsctl, iptables or ip) is a copy
// of it: counted, it would be a second process, or, first after a PID wrap, be taken for
// ovnkube-node and make a restart look done. It is left out (forkedCopies) only when its parent is
// in the same scan, its command line is byte for byte the parent's, and it is at most
// MAX_COPY_AGE_MS old; anything else counts: doubt is a second process (docs/design.md, race 5).
import { closeSync, openSync, readdirSync, readlinkSync, readSync } from 'node:fs';
import path from 'node:path';
import type { GatewayMode, OvnkubeObservation } from '../core/types.js';

/**
 * Flags that the cluster network operator renders on ovnkube-node's command line from 4.10 on
 * and never before: 4.10+ evidence that comes with ovnkube-node itself, hours before the reboot
 * into 4.10's RHCOS changes os-release (docs/design.md, race 6).
 * openshift/cluster-network-operator bindata/network/ovn-kubernetes/: release-4.8 f9c68257e
 * and release-4.9 275ca80b4 render neither anywhere; release-4.10 c7855f10e ovnkube-node.yaml
 * :377,379 renders both at its tip (--ovn-metrics-bind-address since fb86cdf8b, 2021-11-19, before
 * the branch was cut; --export-ovs-metrics only since 630f83895, 2022-10-21: an early 4.10.z has the
 * first alone, and either flag is evidence); release-4.11 33da9fb93 to release-4.13 bc45a4d1d
 * in managed/ and self-hosted/ovnkube-node.yaml; release-4.14 af41a3620 to release-4.20
 * e39d57bde in common/008-script-lib.yaml (`exec /usr/bin/ovnkube --init-ovnkube-controller
 * ... --init-node ...`: the process keeps --init-node).
 */
export const RELEASE_410_FLAGS = ['--export-ovs-metrics', '--ovn-metrics-bind-address'] as const;

/** `--name`, `-name`, `--name=v` or `-name=v`: how Go's flag parsing (urfave/cli) takes a flag. */
function isFlag(arg: string, name: string): boolean {
  const bare = arg.startsWith('--') ? arg.slice(2) : arg.startsWith('-') ? arg.slice(1) : null;
  return bare !== null && (bare === name || bare.startsWith(`${name}=`));
}

/** Parses an ovnkube command line; undefined when it is not `ovnkube --init-node`. */
export function parseOvnkubeCmdline(argv: string[]) {
  const [exe] = argv;
  if (exe === undefined || path.basename(exe) !== 'ovnkube') return undefined;
  if (!argv.some((a) => a === '--init-node' || a.startsWith('--init-node='))) return undefined;
  let modeFlag: string | null = null;
  for (const [i, arg] of argv.entries())
    if (isFlag(arg, 'gateway-mode'))
      modeFlag = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : (argv[i + 1] ?? '');
  const release410Plus = RELEASE_410_FLAGS.find((flag) => argv.some((a) => isFlag(a, flag.slice(2)))) ?? null;
  return { modeFlag, release410Plus };
}

/** The fields of /proc/PID/stat after the parenthesised comm (which may hold spaces): state first. */
const statFields = (stat: string): string[] => stat.slice(stat.lastIndexOf(')') + 2).split(' ');

export const startTimeOf = (stat: string): string | null => statFields(stat)[19] ?? null;

/** The parent's PID, field 4 of /proc/PID/stat. */
export function parentOf(stat: string): number | null {
  const ppid = statFields(stat)[1];
  return ppid !== undefined && /^\d+$/.test(ppid) ? Number(ppid) : null;
}

/** USER_HZ, the ticks of /proc/PID/stat's start time: 100 on x86_64, aarch64, ppc64le, s390x (no sysconf in Node). */
const USER_HZ = 100;

/** The time since boot in USER_HZ ticks, from /proc/uptime (the clock of the start times); null if unreadable. */
function uptimeTicks(procRoot: string, read: ProcReader): number | null {
  try {
    const seconds = Number(/^(\d+(?:\.\d+)?) /.exec(read(`${procRoot}/uptime`).toString('latin1'))?.[1]);
    return Number.isFinite(seconds) ? Math.round(seconds * USER_HZ) : null;
  } catch {
    return null;
  }
}

/** Reads a whole /proc file; the returned buffer may be reused by the next call. Tests wrap it to see what is read. */
export type ProcReader = (file: string) => Buffer;

let buffer = Buffer.allocUnsafe(64 * 1024);

export function readProcFile(file: string): Buffer {
  const fd = openSync(file, 'r');
  try {
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        const bigger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(bigger);
        buffer = bigger;
      }
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) return buffer.subarray(0, length);
      length += n;
    }
  } finally {
    closeSync(fd);
  }
}

const commIsOvnkube = (comm: Buffer) => comm.toString('latin1').replace(/\n$/, '') === 'ovnkube';

const asMode = (m: string | null): GatewayMode | null => (m === 'local' || m === 'shared' ? m : null);

const isPid = (entry: string) => /^\d+$/.test(entry);

/** The comm field of /proc/PID/stat (between the first '(' and the last ')'). */
const commOfStat = (stat: string): string => stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));

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

/** The forked copies among `found` (header); `now` (/proc/uptime) is read only if there is a candidate. */
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

/**
 * An ovnkube --init-node process whose network namespace we may not read (`code`). It may be this node's
 * ovnkube-node: its flags are evidence all the same, and such evidence can only turn changes off.
 */
type UnreadableProcess = Pick<OvnkubeProcess, 'pid' | 'modeFlag' | 'release410Plus'> & { code: string };

export interface OvnkubeScan {
  processes: OvnkubeProcess[];
  unreadable: UnreadableProcess[];
}

/**
 * The ovnkube --init-node processes of our network namespace, and those whose namespace /proc
 * refuses to show: reading /proc/PID/ns/net of another user's process takes the kernel's ptrace
 * access check (root, or CAP_SYS_PTRACE), and a refusal says nothing about where the process runs.
 * `seen` gets every PID looked at but the copies left out, `cmdlines` a copy of each found
 * ovnkube's command line.
 */
export function scanOvnkubeProcesses(
  procRoot = '/proc',
  read: ProcReader = readProcFile,
  seen = new Set<string>(),
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
      const parsed = parseOvnkubeCmdline(raw.toString('utf8').replace(/\0$/, '').split('\0'));
      if (!parsed) continue;
      // A copy: the next read reuses the buffer.
      const cmdline = Buffer.from(raw);
      let net: string;
      try {
        net = readlinkSync(`${dir}/ns/net`);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EACCES' || code === 'EPERM') {
          scan.unreadable.push({ pid: Number(entry), code, ...parsed });
          continue;
        }
        throw err;
      }
      if (net !== ownNet) continue;
      const stat = read(`${dir}/stat`).toString('utf8');
      const startTime = startTimeOf(stat);
      if (startTime === null) continue;
      found.push({
        process: { pid: Number(entry), startTime, mode: asMode(parsed.modeFlag), ...parsed },
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

export const findOvnkubeProcesses = (procRoot = '/proc'): OvnkubeProcess[] => scanOvnkubeProcesses(procRoot).processes;

/** What tells this process from a later one with the same pid (the signal strategy's target id too). */
export const processIdentity = (p: OvnkubeProcess): string => `pid ${p.pid} start ${p.startTime}`;

/** Summarises what /proc shows into the planner's view. */
export function summarise(scan: OvnkubeScan, confMode: GatewayMode | null): OvnkubeObservation {
  const { processes, unreadable } = scan;
  const modeOf = ({ modeFlag: m }: { modeFlag: string | null }) => (m === null ? confMode : asMode(m));
  // Evidence from any ovnkube-node that may be this node's, whatever else is unsure: a
  // 4.10+ flag, or a mode other than the desired one; either only ever turns changes off.
  const all = [...processes, ...unreadable];
  const modes = [...new Set(all.map(modeOf).filter((m) => m !== null))];
  const seen = all.find((p) => p.release410Plus !== null);
  const evidence = { modes, release410Plus: seen ? `${seen.release410Plus} (pid ${seen.pid})` : null };
  const unsure = (detail: string, p?: OvnkubeProcess) =>
    ({ mode: null, pid: p?.pid ?? null, id: p ? processIdentity(p) : null, detail, ...evidence }) as const;
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

/** The oldest full scan a pass may reuse (OvnkubeScanner, point 1). */
export const MAX_REUSE_AGE_MS = 1000;

interface FullScan {
  scan: OvnkubeScan;
  /** The PIDs of the full scan still in /proc (pruned at each reuse). */
  pids: Set<string>;
  /** The command line of the one ovnkube found, as read. */
  cmdline: Buffer | undefined;
  at: number;
}

/**
 * A full scan of /proc, or the last one reused by a pass woken by a route notification alone
 * (a repair), when all of this holds:
 *  1. the last full scan found exactly one ovnkube process and no unreadable one, at most
 *     MAX_REUSE_AGE_MS ago;
 *  2. it is the same process: the same start time in /proc/PID/stat (a reused PID has another),
 *     comm `ovnkube` (an exec changes it), the command line byte for byte (an ovnkube exec'ing
 *     ovnkube keeps comm and start time), and our network namespace;
 *  3. no PID absent from the last full scan has comm `ovnkube`: read at every reuse, never
 *     remembered (it may exec ovnkube later); a PID gone from /proc is forgotten, so a process
 *     that later takes its number is read too, and so is a forked copy the full scan left out.
 * Any doubt (a failed read) is a full scan. Unseen for at most MAX_REUSE_AGE_MS: a process of the
 * last scan that has since exec'd an ovnkube beside the known one, or whose PID a new one took.
 */
export class OvnkubeScanner {
  private last: FullScan | undefined;
  /** How many scans were full and how many reused (tests read them). */
  readonly counts = { full: 0, reused: 0 };

  constructor(
    private readonly procRoot = '/proc',
    private readonly read: ProcReader = readProcFile,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** `reuse`: the caller's pass was woken by a route notification alone. */
  scan(reuse: boolean): OvnkubeScan {
    if (reuse && this.last && this.unchanged(this.last)) {
      this.counts.reused++;
      return this.last.scan;
    }
    const pids = new Set<string>();
    const cmdlines = new Map<number, Buffer>();
    const at = this.now();
    const scan = scanOvnkubeProcesses(this.procRoot, this.read, pids, cmdlines);
    const [only, ...more] = scan.processes;
    const cmdline = only !== undefined && more.length === 0 ? cmdlines.get(only.pid) : undefined;
    this.last = { scan, pids, cmdline, at };
    this.counts.full++;
    return scan;
  }

  private unchanged(last: FullScan): boolean {
    const [known, ...more] = last.scan.processes;
    if (known === undefined || more.length > 0 || last.scan.unreadable.length > 0 || last.cmdline === undefined)
      return false;
    const age = this.now() - last.at;
    if (!(age >= 0 && age <= MAX_REUSE_AGE_MS)) return false;
    try {
      const dir = `${this.procRoot}/${known.pid}`;
      const stat = this.read(`${dir}/stat`).toString('utf8');
      if (commOfStat(stat) !== 'ovnkube' || startTimeOf(stat) !== known.startTime) return false;
      if (!this.read(`${dir}/cmdline`).equals(last.cmdline)) return false;
      if (readlinkSync(`${dir}/ns/net`) !== readlinkSync(`${this.procRoot}/self/ns/net`)) return false;
      const present = new Set<string>();
      for (const entry of readdirSync(this.procRoot)) {
        if (!isPid(entry)) continue;
        present.add(entry);
        if (last.pids.has(entry)) continue;
        let comm: Buffer;
        try {
          comm = this.read(`${this.procRoot}/${entry}/comm`);
        } catch {
          continue; // Exited already.
        }
        if (commIsOvnkube(comm)) return false;
      }
      for (const pid of last.pids) if (!present.has(pid)) last.pids.delete(pid);
      return true;
    } catch {
      return false;
    }
  }
}
