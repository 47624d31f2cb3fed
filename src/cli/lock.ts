// One agent per node: an exclusive flock on `<state-dir>/lock`, taken before the
// socket or the kernel is touched, and held until the process ends. The socket cannot
// be the guard: two agents may be given two sockets, and two starting at once can both
// find no socket and both listen. The kernel drops a flock with its process, so a
// killed agent never blocks the next one; the pid written into the file only names
// the holder in the refusal.
import { readFileSync, ftruncateSync, writeSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { addon } from '../native/addon.js';

export class LockHeldError extends Error {
  readonly code = 'ERR_GWMODE_LOCK_HELD';
  constructor(
    readonly lockPath: string,
    readonly holder: number | null,
  ) {
    super(`another agent (${holder === null ? 'pid not written yet' : `pid ${holder}`}) holds ${lockPath}`);
  }
}

/** The lock cannot be taken for a reason of this machine (permissions, a read-only file system). */
export class LockError extends Error {
  readonly code = 'ERR_GWMODE_LOCK';
}

function holderOf(lockPath: string): number | null {
  try {
    const text = readFileSync(lockPath, 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}

function lockError(lockPath: string, err: NodeJS.ErrnoException): LockError {
  const at = err.path ?? lockPath;
  if (err.code === 'EACCES' || err.code === 'EPERM') {
    // Making a directory or a file takes write access to the directory it goes in.
    return new LockError(`cannot lock ${lockPath}: permission denied (${err.syscall ?? err.code} ${at}); run as root, or give the agent's user write access to ${path.dirname(at)}`);
  }
  if (err.code === 'EROFS') return new LockError(`cannot lock ${lockPath}: ${at} is on a read-only file system and has no lock file yet; --state-dir must be writable the first time`);
  return new LockError(`cannot lock ${lockPath}: ${err.message}`);
}

/**
 * Takes the lock of stateDir (made 0750 when missing) and writes our pid into it. The
 * lock's fd is never closed: closing it would release the lock before the process ends.
 */
export async function lockStateDir(stateDir: string): Promise<void> {
  const lockPath = path.join(stateDir, 'lock');
  try {
    // A directory we create is 0750 whatever the umask: the restart journal is root's business.
    if ((await mkdir(stateDir, { recursive: true, mode: 0o750 })) !== undefined) await chmod(stateDir, 0o750);
  } catch (err) {
    throw lockError(lockPath, err as NodeJS.ErrnoException);
  }
  let fd: number;
  let readOnly: boolean;
  try {
    ({ fd, readOnly } = addon.lockFile(lockPath));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EAGAIN' || e.code === 'EWOULDBLOCK') throw new LockHeldError(lockPath, holderOf(lockPath));
    throw lockError(lockPath, e);
  }
  // Read-only: the pid of an earlier holder stays in the file; the lock is ours all the same.
  if (readOnly) return;
  ftruncateSync(fd);
  writeSync(fd, `${process.pid}\n`, 0);
}
