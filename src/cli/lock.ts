// One agent per node: an exclusive flock on `<state-dir>/lock`, taken before the
// socket or the kernel is touched, and held until the process ends. The socket cannot
// be the guard: two agents may be given two sockets, and two starting at once can both
// find no socket and both listen. The kernel drops a flock with its process, so a
// killed agent never blocks the next one. The refusal names the holder as the kernel
// knows it (/proc/locks): the pid written into the file is not trusted, since an agent
// that took the lock on a read-only file system could not write its own, and the file
// still names an earlier holder. When /proc/locks does not show it: "pid unknown".
// A command refused after taking the lock (a second agent whose socket is taken) leaves
// nothing it created: it removes the lock file and the directories it made, still
// holding the lock; and a lock counts only on the file its path still names.
import {
  closeSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { chmod, mkdir, open, unlink } from 'node:fs/promises';
import path from 'node:path';
import { addon } from '../native/addon.js';
import { CREATE_NEW } from '../restart/journal.js';

export class LockHeldError extends Error {
  readonly code = 'ERR_GWMODE_LOCK_HELD';
  constructor(
    readonly lockPath: string,
    readonly holder: number | null,
  ) {
    super(`another agent (${holder === null ? 'pid unknown' : `pid ${holder}`}) holds ${lockPath}`);
  }
}

/** `apply` would change the kernel with nothing journaled: the state directory takes no writes. */
export class StateDirUnwritableError extends Error {
  readonly code = 'ERR_GWMODE_STATE_DIR_UNWRITABLE';
}

/** The lock cannot be taken for a reason of this machine (permissions, a read-only file system). */
export class LockError extends Error {
  readonly code = 'ERR_GWMODE_LOCK';
}

/**
 * The pid of the FLOCK on (dev, ino) in /proc/locks' text, or null: none, a pid this
 * pid namespace cannot see (0), or several (never for an exclusive flock). Lines with
 * `->` are waiters, not holders. Fields: `1: FLOCK ADVISORY WRITE PID MAJ:MIN:INO 0 EOF`,
 * the device numbers in hex.
 */
export function flockHolderIn(procLocks: string, major: number, minor: number, ino: bigint): number | null {
  const holders = new Set<number>();
  for (const line of procLocks.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[1] !== 'FLOCK' || f.includes('->')) continue;
    const [, maj, min, inode] = /^([0-9a-f]+):([0-9a-f]+):(\d+)$/i.exec(f[5] ?? '') ?? [];
    const pid = Number(f[4]);
    if (maj === undefined || min === undefined || inode === undefined) continue;
    if (parseInt(maj, 16) !== major || parseInt(min, 16) !== minor || BigInt(inode) !== ino) continue;
    if (Number.isInteger(pid) && pid > 0) holders.add(pid);
  }
  const [holder, ...others] = holders;
  return others.length === 0 ? (holder ?? null) : null;
}

/** Who holds the lock, as the kernel says (the file's own pid may be an earlier holder's). */
function holderOf(lockPath: string): number | null {
  try {
    const st = statSync(lockPath, { bigint: true });
    // glibc's major()/minor() of a dev_t.
    const dev = st.dev;
    const major = Number(((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn));
    const minor = Number((dev & 0xffn) | ((dev >> 12n) & ~0xffn));
    return flockHolderIn(readFileSync('/proc/locks', 'utf8'), major, minor, st.ino);
  } catch {
    return null;
  }
}

function lockError(lockPath: string, err: NodeJS.ErrnoException): LockError {
  const at = err.path ?? lockPath;
  if (err.code === 'EACCES' || err.code === 'EPERM') {
    // Making a directory or a file takes write access to the directory it goes in.
    return new LockError(
      `cannot lock ${lockPath}: permission denied (${err.syscall ?? err.code} ${at}); run as root, or give the agent's user write access to ${path.dirname(at)}`,
    );
  }
  if (err.code === 'EROFS')
    return new LockError(
      `cannot lock ${lockPath}: ${at} is on a read-only file system and has no lock file yet; --state-dir must be writable the first time`,
    );
  return new LockError(`cannot lock ${lockPath}: ${err.message}`);
}

/** The lock held; release() takes away what taking it created, for a command refused before it did anything. */
export interface StateDirLock {
  /**
   * Removes the lock file and the state directory (and its parents) when this process
   * created them and they hold nothing else; the lock itself stays held until the
   * process ends. Best effort: what cannot be removed stays.
   */
  release(): void;
}

/** The directories mkdir -p made for dir: from dir up to the first one it created. */
function madeDirs(dir: string, first: string | undefined): string[] {
  if (first === undefined) return [];
  const top = path.resolve(first);
  let at = path.resolve(dir);
  const made = [at];
  while (at !== top && path.dirname(at) !== at) made.push((at = path.dirname(at)));
  return made;
}

/** Same file: the lock was taken on the file the path names now, not on one a releasing holder unlinked. */
function stillNamed(fd: number, lockPath: string): boolean {
  try {
    return fstatSync(fd).ino === statSync(lockPath).ino;
  } catch {
    return false;
  }
}

/**
 * Takes the lock of stateDir (made 0750 when missing) and writes our pid into it. The
 * lock's fd is never closed: closing it would release the lock before the process ends.
 * A holder refused before it acted removes the lock file it created (release); one who
 * opened that file before it went would hold a lock nobody else sees, so the lock
 * counts only on the file the path still names, and is taken again otherwise.
 */
export async function lockStateDir(stateDir: string): Promise<StateDirLock> {
  const lockPath = path.join(stateDir, 'lock');
  for (let attempt = 1; ; attempt++) {
    let dirs: string[];
    try {
      // A directory we create is 0750 whatever the umask: the restart journal is root's business.
      const first = await mkdir(stateDir, { recursive: true, mode: 0o750 });
      if (first !== undefined) await chmod(stateDir, 0o750);
      dirs = madeDirs(stateDir, first);
    } catch (err) {
      throw lockError(lockPath, err as NodeJS.ErrnoException);
    }
    const fileExisted = existsSync(lockPath);
    let fd: number;
    let readOnly: boolean;
    try {
      ({ fd, readOnly } = addon.lockFile(lockPath));
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EAGAIN' || e.code === 'EWOULDBLOCK') throw new LockHeldError(lockPath, holderOf(lockPath));
      // The directory went with a releasing holder between our mkdir and open: again.
      if (e.code === 'ENOENT' && attempt < 3) continue;
      throw lockError(lockPath, e);
    }
    if (!stillNamed(fd, lockPath)) {
      closeSync(fd);
      if (attempt < 3) continue;
      throw new LockError(
        `cannot lock ${lockPath}: it was removed and made again while the lock was taken, three times`,
      );
    }
    const release = () => {
      if (!fileExisted) rmSync(lockPath, { force: true });
      for (const dir of dirs) {
        try {
          rmdirSync(dir);
        } catch {
          return;
        }
      }
    };
    // Read-only: the pid of an earlier holder stays in the file; the lock is ours all the same.
    if (readOnly) return { release };
    // The pid is only a hint for people reading the file (the refusal asks the kernel):
    // a full file system (ENOSPC) must not stop an agent that holds the lock.
    try {
      ftruncateSync(fd);
      writeSync(fd, `${process.pid}\n`, 0);
    } catch {
      // the lock is ours all the same
    }
    return { release };
  }
}

/**
 * Throws, saying why, unless the state directory takes a write now (a byte written,
 * synced and removed): a read-only file system (where the lock is taken read-only), a
 * full one, or permissions. `apply` does not change the kernel on a node where nothing
 * could be journaled.
 */
export async function assertStateDirWritable(stateDir: string): Promise<void> {
  const probe = path.join(stateDir, `.write-probe-${process.pid}`);
  try {
    await unlink(probe).catch(() => undefined);
    const handle = await open(probe, CREATE_NEW, 0o600);
    try {
      await handle.writeFile('x');
      await handle.sync();
    } finally {
      await handle.close();
      await unlink(probe).catch(() => undefined);
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why =
      e.code === 'EROFS'
        ? 'read-only file system'
        : e.code === 'ENOSPC'
          ? 'no space left'
          : e.code === 'EACCES' || e.code === 'EPERM'
            ? 'permission denied'
            : e.message;
    throw new StateDirUnwritableError(
      `the state directory ${stateDir} is not writable (${e.code ?? 'error'}: ${why}), so nothing can be journaled; refusing to change routes`,
    );
  }
}
