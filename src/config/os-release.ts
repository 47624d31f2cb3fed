// The host's os-release, for the OpenShift release it names (core/platform.ts). Never fatal:
// a file that cannot be read is no evidence, and with no evidence the agent changes nothing.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { noOsRelease, parseOsRelease, type OsRelease } from '../core/platform.js';

export const DEFAULT_OS_RELEASE = '/etc/os-release';
/** A real os-release is under 1 KiB. */
export const MAX_OS_RELEASE_BYTES = 64 * 1024;

/** Opened non-blocking and refused unless a regular file (a FIFO would hold a pool worker), read one byte past the limit. */
export async function readOsRelease(file: string): Promise<OsRelease> {
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    return noOsRelease(file, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
  try {
    if (!(await handle.stat()).isFile()) return noOsRelease(file, 'not a regular file');
    const buffer = Buffer.alloc(MAX_OS_RELEASE_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > MAX_OS_RELEASE_BYTES) return noOsRelease(file, `larger than ${MAX_OS_RELEASE_BYTES} bytes`);
    return parseOsRelease(buffer.subarray(0, bytesRead).toString('utf8'), file);
  } catch (err) {
    return noOsRelease(file, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
  } finally {
    await handle.close();
  }
}
