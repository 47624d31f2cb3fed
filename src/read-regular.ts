// A small file anyone with access to the host may have put there (os-release, ovnkube.conf, the
// journal). Opened non-blocking: a FIFO's open waits for a writer, holding a thread-pool worker
// (and the start) for ever. Read one byte past the limit, not to stat's size: the file may grow.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

/** The file's bytes; a system error (ENOENT, EACCES) when it cannot be opened, else an Error saying why it is refused. */
export async function readRegularFile(file: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!(await handle.stat()).isFile()) throw new Error('not a regular file');
    const buffer = Buffer.alloc(maxBytes + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
