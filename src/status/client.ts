// The CLI's side of the status socket.
//
// One GET per process, written over node:net rather than node:http: the probes run this
// every few seconds, and on Node 24 (the image's) loading node:http alone costs about
// 50 ms and 15 MB, more than the rest of the command. The answer is read to the end
// (`Connection: close`), with its Content-Length or chunked body as the agent sends it.
import type { StatusReport } from './report.js';
import { requireModule } from '../require.js';

const net = requireModule('node:net') as typeof import('node:net');

export class AgentUnreachableError extends Error {
  readonly code = 'ERR_GWMODE_UNREACHABLE';
  /** errno: the system error's code when the connection failed (ECONNREFUSED, ENOENT, EAGAIN). */
  constructor(
    message: string,
    readonly errno?: string,
  ) {
    super(message);
  }
}

/** The agent may well be running: the socket (or its directory) is closed to this caller. */
export class AgentDeniedError extends Error {
  readonly code = 'ERR_GWMODE_SOCKET_DENIED';
}

/**
 * The most the client reads of an answer, header and body: the agent's answers are a few
 * kilobytes (a status report, 256 events), so anything past this is not the agent.
 */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

/** A chunk-size line: hex digits, then perhaps extensions. */
const CHUNK_SIZE = /^([0-9a-fA-F]+)(;.*)?$/;

/** A chunked body, decoded; throws when it is cut short or malformed. */
function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let total = 0;
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol < 0) throw new Error('chunked body cut short');
    const line = CHUNK_SIZE.exec(body.subarray(at, eol).toString('latin1'));
    if (!line) throw new Error('bad chunk size');
    // Leading zeros aside, more than 8 hex digits is past any cap: refuse before parseInt loses precision.
    const digits = line[1]!.replace(/^0+(?=.)/, '');
    const size = digits.length > 8 ? Infinity : parseInt(digits, 16);
    if (size > MAX_ANSWER_BYTES - total) throw new Error(`chunked body longer than ${MAX_ANSWER_BYTES} bytes`);
    if (size === 0) return Buffer.concat(parts);
    const data = eol + 2;
    if (data + size + 2 > body.length) throw new Error('chunked body cut short');
    if (body[data + size] !== 0x0d || body[data + size + 1] !== 0x0a)
      throw new Error('chunk data not followed by CRLF');
    parts.push(body.subarray(data, data + size));
    total += size;
    at = data + size + 2;
  }
}

/** The status code and body text of a whole HTTP/1.1 answer; throws when it is not one. */
export function parseAnswer(raw: Buffer): { code: number; text: string } {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) throw new Error('the answer ended inside its header');
  const [status = '', ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(status);
  if (!m) throw new Error(`not an HTTP answer: ${JSON.stringify(status.slice(0, 40))}`);
  const header = (name: string) =>
    lines
      .find((l) => l.slice(0, l.indexOf(':')).trim().toLowerCase() === name)
      ?.slice(name.length + 1)
      .trim();
  let body = raw.subarray(end + 4);
  const length = header('content-length');
  if (/\bchunked\b/i.test(header('transfer-encoding') ?? '')) body = dechunk(body);
  else if (length !== undefined) {
    if (!/^\d+$/.test(length) || Number(length) > body.length) throw new Error('the answer ended inside its body');
    body = body.subarray(0, Number(length));
  }
  return { code: Number(m[1]), text: body.toString('utf8') };
}

/**
 * GET a path of the agent's socket: the HTTP status code and the parsed JSON body. A
 * connect to a listener whose backlog is full fails at once with EAGAIN on a UNIX socket
 * (it never waits, as TCP does): an agent busy for a moment under a burst of connects.
 * That is retried, a little later each time, within timeoutMs.
 */
export async function fetchPath(
  socket: string,
  urlPath: string,
  timeoutMs = 5000,
): Promise<{ code: number; body: unknown }> {
  // A duration: on the monotonic clock (a wall clock stepped by NTP would end it early or late).
  const deadline = performance.now() + timeoutMs;
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      return await fetchOnce(socket, urlPath, Math.max(1, Math.ceil(deadline - performance.now())));
    } catch (err) {
      if ((err as { errno?: string }).errno !== 'EAGAIN' || performance.now() + wait >= deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

function fetchOnce(socket: string, urlPath: string, timeoutMs: number): Promise<{ code: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const conn = net.connect(socket, () =>
      conn.write(`GET ${urlPath} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`),
    );
    conn.setTimeout(timeoutMs, () => conn.destroy(new Error('timed out')));
    let received = 0;
    conn.on('data', (d: Buffer) => {
      received += d.length;
      if (received <= MAX_ANSWER_BYTES) return void chunks.push(d);
      conn.destroy();
      reject(new AgentUnreachableError(`bad answer on ${socket}: longer than ${MAX_ANSWER_BYTES} bytes`));
    });
    conn.on('end', () => {
      conn.destroy();
      try {
        const { code, text } = parseAnswer(Buffer.concat(chunks));
        resolve({ code, body: JSON.parse(text) as unknown });
      } catch (err) {
        reject(new AgentUnreachableError(`bad answer on ${socket}: ${(err as Error).message}`));
      }
    });
    conn.on('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EACCES' || err.code === 'EPERM'
          ? new AgentDeniedError(
              `permission denied on ${socket} (${err.code}): the caller must be root or in the socket's group`,
            )
          : new AgentUnreachableError(
              `cannot reach the agent on ${socket} (${err.code ?? err.message}): is the agent running?`,
              err.code,
            ),
      ),
    );
  });
}

export async function fetchStatus(socket: string, timeoutMs = 5000): Promise<StatusReport> {
  return (await fetchPath(socket, '/status', timeoutMs)).body as StatusReport;
}
