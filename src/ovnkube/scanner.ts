// OvnkubeScanner: a full scan of /proc (scan.ts), or the last one reused.
//
// OvnkubeScanner lets a pass woken by a route notification alone (a repair) reuse the
// last full scan instead of reading the comm of every process, when all of this holds:
//  1. the last full scan found exactly one ovnkube process and no unreadable one, and
//     it is at most a second old (MAX_REUSE_AGE_MS; older, the pass scans in full);
//  2. that process is still there and is the same one: its /proc/PID/stat gives the
//     same start time (a reused PID has another) and the comm `ovnkube` (an exec
//     changes it), its command line is byte for byte the one parsed (an ovnkube that
//     exec'd ovnkube with other arguments keeps comm and start time), and its network
//     namespace is still ours;
//  3. no process that was not in the last full scan has a comm that says ovnkube: the
//     comm of every such PID is read at every reuse (never remembered as "not
//     ovnkube", since it may exec ovnkube later), and a PID of the full scan that is
//     gone from /proc is forgotten, so that a process which later takes its number is
//     read too.
// Any doubt (a read that fails, anything else in /proc/PID/stat) is a full scan. What
// it cannot see, for at most MAX_REUSE_AGE_MS after a full scan: a process that was in
// that scan and has since exec'd an ovnkube of its own beside the one known (its comm
// is not read again), and a PID of that scan that exited and was taken by a new process
// between two passes (readdir shows the number throughout). Every other wake-up (the
// periodic resync, the mode file, a link or address event, a retry, the decision's own
// wake-ups while the agent waits on ovnkube-node) scans in full and sees it.
import { readdirSync, readlinkSync } from 'node:fs';
import { commIsOvnkube, commOfStat, isPid, readProcFile, startTimeOf, type ProcReader } from './procfs.js';
import { scanOvnkubeProcessesSync, type OvnkubeScan } from './scan.js';

/** The oldest full scan a pass may reuse (header, point 1). */
export const MAX_REUSE_AGE_MS = 1000;

interface FullScan {
  scan: OvnkubeScan;
  /** The PIDs of the full scan still in /proc (pruned at each reuse). */
  pids: Set<string>;
  /** The command line of the one ovnkube found, as read. */
  cmdline: Buffer | undefined;
  at: number;
}

/** Scans /proc, or reuses the last full scan where the header's points 1 to 3 prove it current. */
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
    const scan = scanOvnkubeProcessesSync(this.procRoot, this.read, pids, cmdlines);
    const [only, ...more] = scan.processes;
    this.last = {
      scan,
      pids,
      cmdline: only !== undefined && more.length === 0 ? cmdlines.get(only.pid) : undefined,
      at,
    };
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
