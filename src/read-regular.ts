// Reading a small file that anyone with access to the host may have put there (os-release,
// ovnkube.conf, the migration journal). Opened non-blocking: opening a FIFO for reading
// waits for a writer, and that wait would hold a thread-pool worker for ever (and the
// start with it). Then refused unless a regular file, and read one byte past the limit
// rather than trusting the size from stat: the file may grow between the two calls.
// (The mode file has its own reader, which also stamps the file for settled.ts.)
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
