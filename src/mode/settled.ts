// When a read of the mode file may be taken as the desired state. Pure: source.ts reads the file
// and the clocks, this says "take it" or "look again in N ms" (the race: docs/design.md, 2).
//  1. A file that changed while it was read (stamps before and after differ) is never taken.
//  2. A ConfigMap volume is written by kubelet's atomic writer: its files are whole before `..data`
//     is swapped to them by one rename. Taken at once.
//  3. A plain file may be written in place, and half a manifest is valid YAML saying shared: taken
//     only once nobody wrote it for QUIET_MS (mtime against the wall clock), or when found unchanged
//     QUIET_MS apart on the monotonic clock (a file system clock that disagrees, or a wall clock
//     stepped back, cannot hold it forever). Until then a read, garbled or not, is "not yet".
//  4. A read that failed before the file could be looked at has no stamp: taken as it is.

export const QUIET_MS = 200;
/** How soon a file that changed under a read is read again. */
export const REREAD_MS = 5;

/** key: inode, size, mtime and ctime (ns), as one comparable string. */
export interface FileStamp {
  key: string;
  mtimeMs: number;
}

/** atomic: point 2; stamp null: point 4. */
export interface ReadFacts {
  atomic: boolean;
  stamp: FileStamp | null;
  changedDuringRead: boolean;
}

/** The stamp a plain file first showed, and when (monotonic): what "unchanged QUIET_MS apart" compares. */
export interface FirstSeen {
  key: string;
  at: number;
}

export type Verdict = { take: true } | { take: false; retryInMs: number; why: string };

const TAKE: Verdict = { take: true };

/** `f`: the read's facts; `now`: wall ms (against the mtime); `seenNow`: the clock of FirstSeen.at. */
export function verdictOf(
  f: ReadFacts,
  seen: FirstSeen | null,
  now: number,
  quietMs = QUIET_MS,
  seenNow = now,
): Verdict {
  if (f.changedDuringRead) return { take: false, retryInMs: REREAD_MS, why: 'the file changed while it was read' };
  const age = now - (f.stamp?.mtimeMs ?? 0);
  if (f.stamp === null || f.atomic || age >= quietMs) return TAKE;
  if (seen?.key === f.stamp.key && seenNow - seen.at >= quietMs) return TAKE;
  return {
    take: false,
    retryInMs: Math.max(1, Math.ceil(age >= 0 ? quietMs - age : quietMs)),
    why: `written ${Math.max(0, Math.round(age))} ms ago: waiting until it has been left alone for ${quietMs} ms`,
  };
}

/** The first time this stamp was seen (kept while the stamp stays the same). */
export const nextFirstSeen = (previous: FirstSeen | null, stamp: FileStamp | null, now: number): FirstSeen | null =>
  stamp === null ? null : previous?.key === stamp.key ? previous : { key: stamp.key, at: now };
