// When a read of the mode file may be taken as the desired state. Pure: the shell
// (source.ts) reads the file and the clock, this says "take it" or "look again in N ms".
//
// The agent reads the mode file at once when a watch reports a change: no debounce.
// What keeps it from taking half a file:
//  1. A file that changed while it was read (its stamp before and after the read
//     differ) is never taken: look again shortly.
//  2. A ConfigMap volume (the source is the volume's directory, or a key linked through
//     its `..data`) is written by kubelet's atomic writer: the new files are complete
//     before `..data` is swapped to them by one rename, so a read after the swap sees
//     a whole file. Taken at once.
//  3. A plain file may be written in place (`echo local > mode`, an editor that does
//     not rename): a read may catch the truncation or half the content, and half a
//     Network manifest is valid YAML that says shared. Such a read is taken only
//     when nobody wrote the file for QUIET_MS (its mtime is that old), or when it was
//     found unchanged QUIET_MS apart (a clock that disagrees with the file system
//     cannot hold it back forever). The age is wall time against the mtime; "apart" is
//     measured on the monotonic clock, so a wall clock stepped back between two reads
//     does not hold the file back until the clock has caught up again. A parse failure or a garbled read of a file being
//     written is thus "not yet", never an error, until the writer has stopped.
//     QUIET_MS is the old debounce: a writer pausing longer than that mid-file was,
//     and is, read half-way.
//  4. A read that failed before the file could be looked at (it does not exist, is
//     not a regular file, cannot be opened) has no stamp: taken as it is (an error,
//     and the last valid mode is kept).

export const QUIET_MS = 200;
/** How soon a file that changed under a read is read again. */
export const REREAD_MS = 5;

export interface FileStamp {
  /** Inode, size, mtime and ctime (ns), as one comparable string. */
  key: string;
  mtimeMs: number;
}

export interface ReadFacts {
  /** Kubelet's atomic writer made it (point 2). */
  atomic: boolean;
  /** Null when the read failed before the file was opened (point 4). */
  stamp: FileStamp | null;
  changedDuringRead: boolean;
}

/** The stamp a plain file first showed, and when: what "unchanged QUIET_MS apart" compares with. */
export interface FirstSeen {
  key: string;
  at: number;
}

export type Verdict = { take: true } | { take: false; retryInMs: number; why: string };

/** `now`: wall ms (against the mtime); `seenNow`: the clock of FirstSeen.at (monotonic in the agent; `now` by default). */
export function verdictOf(
  facts: ReadFacts,
  firstSeen: FirstSeen | null,
  now: number,
  quietMs = QUIET_MS,
  seenNow = now,
): Verdict {
  if (facts.changedDuringRead) return { take: false, retryInMs: REREAD_MS, why: 'the file changed while it was read' };
  if (facts.stamp === null || facts.atomic) return { take: true };
  const age = now - facts.stamp.mtimeMs;
  if (age >= quietMs) return { take: true };
  if (firstSeen !== null && firstSeen.key === facts.stamp.key && seenNow - firstSeen.at >= quietMs)
    return { take: true };
  const wait = age >= 0 ? quietMs - age : quietMs;
  return {
    take: false,
    retryInMs: Math.max(1, Math.ceil(wait)),
    why: `written ${Math.max(0, Math.round(age))} ms ago: waiting until it has been left alone for ${quietMs} ms`,
  };
}

/** The first time this stamp was seen (kept while the stamp stays the same). */
export function nextFirstSeen(previous: FirstSeen | null, stamp: FileStamp | null, now: number): FirstSeen | null {
  if (stamp === null) return null;
  return previous !== null && previous.key === stamp.key ? previous : { key: stamp.key, at: now };
}
