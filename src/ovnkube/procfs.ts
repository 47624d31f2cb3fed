// Reading /proc: the files, the fields of /proc/PID/stat, and the cheap tests on comm and
// argv[0] that every process gets.
//
// The scan reads /proc synchronously, into one buffer kept for the life of the
// process: it runs on every pass, on the way from a route notification to its repair.
// Each /proc file costs an open, a read and a close of some microseconds; through
// the thread pool (fs/promises) each of those is a round trip and readFile allocates
// 64 KiB for a file whose size /proc reports as 0, which cost a pass tens of
// milliseconds and most of the agent's garbage collection.
//
// Only /proc/PID/comm is read for every process: reading /proc/PID/cmdline takes the
// target's mmap lock, so a single process stuck in D state holding it would freeze the
// event loop (healthz, the netlink drain) on a synchronous read, and comm does not take
// it. The command line is read only where comm says `ovnkube`: the kernel sets comm at
// exec to the name of the file executed (at most 15 bytes), so ovnkube-node, which the
// images run as `exec /usr/bin/ovnkube --init-node ...`, reads `ovnkube` (as does the
// stand-in of the tests, /bin/sh copied under that name). It is decoded only when
// argv[0] is named ovnkube too.
import { closeSync, openSync, readSync } from 'node:fs';

/** The fields of /proc/PID/stat after the parenthesised comm (which may hold spaces): state first. */
const statFields = (stat: string): string[] => stat.slice(stat.lastIndexOf(')') + 2).split(' ');

/** The start time field of /proc/PID/stat. */
export function startTimeOf(stat: string): string | null {
  return statFields(stat)[19] ?? null;
}

/** The parent's PID, field 4 of /proc/PID/stat. */
export function parentOf(stat: string): number | null {
  const ppid = statFields(stat)[1];
  return ppid !== undefined && /^\d+$/.test(ppid) ? Number(ppid) : null;
}

/**
 * USER_HZ, the clock ticks per second of /proc/PID/stat's start time: 100 on every
 * architecture OpenShift runs on (x86_64, aarch64, ppc64le, s390x); Node cannot ask
 * sysconf(_SC_CLK_TCK).
 */
export const USER_HZ = 100;

/** The time since boot in USER_HZ ticks, from /proc/uptime (the clock of the start times); null if unreadable. */
export function uptimeTicks(procRoot: string, read: ProcReader): number | null {
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

/** The whole of a /proc file, in the shared buffer (valid until the next call). */
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

const OVNKUBE = Buffer.from('ovnkube');
const SLASH = 0x2f;
const NEWLINE = 0x0a;

/** Whether /proc/PID/comm (the name, then a newline) says ovnkube. */
export function commIsOvnkube(comm: Buffer): boolean {
  const end = comm.length > 0 && comm[comm.length - 1] === NEWLINE ? comm.length - 1 : comm.length;
  return end === OVNKUBE.length && comm.compare(OVNKUBE, 0, OVNKUBE.length, 0, end) === 0;
}

/** Whether argv[0] of a raw command line is named ovnkube (the cheap test every process gets). */
export function namedOvnkube(cmdline: Buffer): boolean {
  let end = cmdline.indexOf(0);
  if (end < 0) end = cmdline.length;
  const start = cmdline.lastIndexOf(SLASH, end - 1) + 1;
  return end - start === OVNKUBE.length && cmdline.compare(OVNKUBE, 0, OVNKUBE.length, start, end) === 0;
}

export const isPid = (entry: string) => /^\d+$/.test(entry);

/** The comm field of /proc/PID/stat (between the first '(' and the last ')'). */
export function commOfStat(stat: string): string {
  return stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
}
