import { readdirSync, readlinkSync } from 'node:fs';
import {
  commIsOvnkube,
  commOfStat,
  isPid,
  readProcFile,
  scanOvnkubeProcesses,
  startTimeOf,
  type OvnkubeScan,
  type ProcReader,
} from './proc.js';

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
