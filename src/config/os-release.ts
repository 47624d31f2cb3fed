// The host's os-release, for the OpenShift release it names (core/platform.ts). Never fatal:
// a file that cannot be read is no evidence, and with no evidence the agent changes nothing.
import { noOsRelease, parseOsRelease, type OsRelease } from '../core/platform.js';
import { readRegularFile } from '../read-regular.js';

export const DEFAULT_OS_RELEASE = '/etc/os-release';
/** A real os-release is under 1 KiB. */
export const MAX_OS_RELEASE_BYTES = 64 * 1024;

/** Read as src/read-regular.ts reads: non-blocking, regular files only, bounded. */
export async function readOsRelease(file: string): Promise<OsRelease> {
  try {
    return parseOsRelease((await readRegularFile(file, MAX_OS_RELEASE_BYTES)).toString('utf8'), file);
  } catch (err) {
    return noOsRelease(file, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
}
