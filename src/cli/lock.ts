// One agent per node: an exclusive flock on `<state-dir>/lock`, taken before the socket
// or the kernel is touched and held until the process ends. Not the socket: two agents
// may be given two sockets, and two starting at once can both find none. The kernel drops
// a flock with its process, so a killed agent never blocks the next one. The refusal names
// the holder as the kernel knows it (/proc/locks), not by the pid in the file: an agent
// that took the lock on a read-only file system could not write its own.
// A command refused after taking the lock removes the lock file and the directories it
// made (release), so a lock counts only on the file its path still names.
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
  constructor(lockPath: string, holder: number | null) {
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
 * The pid of the FLOCK on (dev, ino) in /proc/locks' text, or null: none, a pid this pid
 * namespace cannot see (0), or several. `->` lines are waiters. Fields:
 * `1: FLOCK ADVISORY WRITE PID MAJ:MIN:INO 0 EOF`, the device numbers in hex.
 */
export function flockHolderIn(procLocks: string, major: number, minor: number, ino: bigint): number | null {
  const holders = new Set<number>();
  for (const line of procLocks.split('\n')) {
    const f = line.trim().split(/\s+/);
    const [, maj, min, inode] = /^([0-9a-f]+):([0-9a-f]+):(\d+)$/i.exec(f[5] ?? '') ?? [];
    if (f[1] !== 'FLOCK' || f.includes('->') || maj === undefined || min === undefined || inode === undefined) continue;
    const pid = Number(f[4]);
    if (parseInt(maj, 16) === major && parseInt(min, 16) === minor && BigInt(inode) === ino && pid > 0)
      holders.add(pid);
  }
  const [holder, ...others] = holders;
  return others.length === 0 ? (holder ?? null) : null;
}

function holderOf(lockPath: string): number | null {
  try {
    const { dev, ino } = statSync(lockPath, { bigint: true });
    // glibc's major()/minor() of a dev_t.
    const major = Number(((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn));
    const minor = Number((dev & 0xffn) | ((dev >> 12n) & ~0xffn));
    return flockHolderIn(readFileSync('/proc/locks', 'utf8'), major, minor, ino);
  } catch {
    return null;
  }
}

function lockError(lockPath: string, err: NodeJS.ErrnoException): LockError {
  const at = err.path ?? lockPath;
  // Making a directory or a file takes write access to the directory it goes in.
  if (err.code === 'EACCES' || err.code === 'EPERM')
    return new LockError(
      `cannot lock ${lockPath}: permission denied (${err.syscall ?? err.code} ${at}); run as root, or give the agent's user write access to ${path.dirname(at)}`,
    );
  if (err.code === 'EROFS')
    return new LockError(
      `cannot lock ${lockPath}: ${at} is on a read-only file system and has no lock file yet; --state-dir must be writable the first time`,
    );
  return new LockError(`cannot lock ${lockPath}: ${err.message}`);
}

/** The lock held; release() takes away what taking it created, for a command refused before it did anything. */
export interface StateDirLock {
  /** Best effort, and the lock itself stays held until the process ends. */
  release(): void;
}

/**
 * Takes the lock of stateDir (made 0750 when missing) and writes our pid into it, a hint
 * for people only. Its fd is never closed: that would release the lock. One who opened the
 * file before a refused holder removed it would hold a lock nobody else sees, so the lock
 * is taken again unless the path still names the file locked.
 */
export async function lockStateDir(stateDir: string): Promise<StateDirLock> {
  const lockPath = path.join(stateDir, 'lock');
  for (let attempt = 1; ; attempt++) {
    // The directories mkdir -p made, from stateDir up to the first it created.
    const made: string[] = [];
    try {
      // 0750 whatever the umask: the restart journal is root's business.
      const first = await mkdir(stateDir, { recursive: true, mode: 0o750 });
      if (first !== undefined) {
        await chmod(stateDir, 0o750);
        let at = path.resolve(stateDir);
        made.push(at);
        while (at !== path.resolve(first) && path.dirname(at) !== at) made.push((at = path.dirname(at)));
      }
    } catch (err) {
      throw lockError(lockPath, err as NodeJS.ErrnoException);
    }
    const fileExisted = existsSync(lockPath);
    let lock: { fd: number; readOnly: boolean };
    try {
      lock = addon.lockFile(lockPath);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code === 'EAGAIN' || e.code === 'EWOULDBLOCK') throw new LockHeldError(lockPath, holderOf(lockPath));
      // The directory went with a releasing holder between our mkdir and open: again.
      if (e.code === 'ENOENT' && attempt < 3) continue;
      throw lockError(lockPath, e);
    }
    let named = false;
    try {
      named = fstatSync(lock.fd).ino === statSync(lockPath).ino;
    } catch {
      // gone: not named
    }
    if (!named) {
      closeSync(lock.fd);
      if (attempt < 3) continue;
      throw new LockError(
        `cannot lock ${lockPath}: it was removed and made again while the lock was taken, three times`,
      );
    }
    // Read-only, the pid of an earlier holder stays in the file; and a full file system
    // (ENOSPC) must not stop an agent that holds the lock.
    try {
      if (!lock.readOnly) {
        ftruncateSync(lock.fd);
        writeSync(lock.fd, `${process.pid}\n`, 0);
      }
    } catch {
      // the lock is ours all the same
    }
    return {
      release: () => {
        if (!fileExisted) rmSync(lockPath, { force: true });
        try {
          for (const dir of made) rmdirSync(dir);
        } catch {
          // not empty, or not ours to remove: it stays
        }
      },
    };
  }
}

const UNWRITABLE: Record<string, string> = {
  EROFS: 'read-only file system',
  ENOSPC: 'no space left',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
};

/**
 * Throws, saying why, unless the state directory takes a write now (a byte written, synced
 * and removed): `apply` does not change the kernel on a node where nothing could be journaled.
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
    throw new StateDirUnwritableError(
      `the state directory ${stateDir} is not writable (${e.code ?? 'error'}: ${UNWRITABLE[e.code ?? ''] ?? e.message}), so nothing can be journaled; refusing to change routes`,
    );
  }
}
