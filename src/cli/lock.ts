// One agent per node: an exclusive flock on `<state-dir>/lock`, taken before the socket or the
// kernel is touched and held until the process ends (not the socket: two agents may be given
// two). The kernel drops a flock with its process, so a killed agent never blocks the next one.
// The refusal names the holder as /proc/locks knows it: on a read-only file system the pid in
// the file is an earlier holder's.
import { closeSync, fstatSync, ftruncateSync, readFileSync, statSync, writeSync } from 'node:fs';
import { chmod, mkdir, open, unlink } from 'node:fs/promises';
import path from 'node:path';
import { coded } from '../dataplane/errors.js';
import { addon } from '../native/addon.js';
import { CREATE_NEW } from '../restart/journal.js';

export class LockHeldError extends Error {
  readonly code = 'ERR_GWMODE_LOCK_HELD';
  constructor(lockPath: string, holder: number | null) {
    super(`another agent (${holder === null ? 'pid unknown' : `pid ${holder}`}) holds ${lockPath}`);
  }
}

export class StateDirUnwritableError extends coded('ERR_GWMODE_STATE_DIR_UNWRITABLE') {}

/** The lock cannot be taken for a reason of this machine (permissions, a read-only file system). */
export class LockError extends coded('ERR_GWMODE_LOCK') {}

/**
 * The pid of the FLOCK on (dev, ino) in /proc/locks' text, or null: none, one this pid namespace
 * cannot see (0), or several. `->` lines are waiters. `1: FLOCK ADVISORY WRITE PID MAJ:MIN:INO 0 EOF`.
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
  const why =
    err.code === 'EACCES' || err.code === 'EPERM'
      ? `permission denied (${err.syscall ?? err.code} ${at}); run as root, or give the agent's user write access to ${path.dirname(at)}`
      : err.code === 'EROFS'
        ? `${at} is on a read-only file system and has no lock file yet; --state-dir must be writable the first time`
        : err.message;
  return new LockError(`cannot lock ${lockPath}: ${why}`);
}

function namesFile(file: string, fd: number): boolean {
  try {
    const [open, named] = [fstatSync(fd), statSync(file)];
    return open.dev === named.dev && open.ino === named.ino;
  } catch {
    return false;
  }
}

/** Takes the lock of stateDir (made 0750 when missing) for as long as the process lives: its fd is never closed. */
export async function lockStateDir(stateDir: string): Promise<void> {
  const lockPath = path.join(stateDir, 'lock');
  let lock: { fd: number; readOnly: boolean };
  try {
    if ((await mkdir(stateDir, { recursive: true, mode: 0o750 })) !== undefined) await chmod(stateDir, 0o750);
    lock = addon.lockFile(lockPath);
    // A lock file unlinked or replaced between our open and flock would be a lock nobody else sees.
    for (let tries = 1; !namesFile(lockPath, lock.fd); tries++) {
      closeSync(lock.fd);
      if (tries === 5) throw new Error('it keeps being replaced');
      lock = addon.lockFile(lockPath);
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EAGAIN' || e.code === 'EWOULDBLOCK') throw new LockHeldError(lockPath, holderOf(lockPath));
    throw lockError(lockPath, e);
  }
  // Our pid, a hint for people only: a full file system (ENOSPC) must not stop an agent that holds the lock.
  if (!lock.readOnly)
    try {
      ftruncateSync(lock.fd);
      writeSync(lock.fd, `${process.pid}\n`, 0);
    } catch {
      // the lock is ours all the same
    }
}

const UNWRITABLE: Record<string, string> = {
  EROFS: 'read-only file system',
  ENOSPC: 'no space left',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
};

/** Throws unless the state directory takes a write now: `apply` does not act where nothing can be journaled. */
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
