// A seeded generator of malformed and hostile HTTP/1.1 requests, and a driver that
// sends them to a UNIX socket: the short form runs in `npm test`, the long one in
// bench/socket-abuse.ts. Each case is bytes to write and what the client does then:
// wait for the server to answer or close, or drop the connection abruptly.
import net from 'node:net';
import { bytes, int, pick, type Rng } from './prng.js';

export interface HostileCase {
  kind: string;
  /** Written in order, a tick apart (a request split across writes). */
  chunks: Buffer[];
  /** Requests in the case (pipelining sends several on one connection). */
  requests: number;
  /** Destroy the connection right after the last write instead of awaiting the answer. */
  abrupt: boolean;
}

const PATHS = [
  '/status',
  '/healthz',
  '/readyz',
  '/',
  '/metrics',
  '/../../etc/passwd',
  '/%2e%2e/%2e%2e/etc/shadow',
  '//etc/passwd',
  '/status/../../../proc/self/environ',
  '/__proto__',
  '/constructor',
  '/status%00.json',
  '/healthz?x=' + 'a'.repeat(100),
  '*',
  'http://localhost/status',
  'file:///etc/passwd',
];
const METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'TRACE',
  'CONNECT',
  'PROPFIND',
  'get',
  'G ET',
  'GETT',
  '\x00GET',
  'BREW',
  'X'.repeat(300),
];
const VERSIONS = [
  'HTTP/1.1',
  'HTTP/1.0',
  'HTTP/0.9',
  'HTTP/2.0',
  'HTTP/9.9',
  'HTTP/1.1x',
  'http/1.1',
  '',
  'HTTP/1.1 extra',
  'HTTP/01.1',
];

const req = (method: string, path: string, headers: string[], body = ''): string =>
  `${method} ${path} HTTP/1.1\r\n${['Host: localhost', ...headers].join('\r\n')}\r\n\r\n${body}`;

type Maker = (rng: Rng) => Omit<HostileCase, 'kind' | 'abrupt'> & { abrupt?: boolean };

const b = (s: string | Buffer): Buffer => (typeof s === 'string' ? Buffer.from(s, 'latin1') : s);

const MAKERS: Record<string, Maker> = {
  'bad request line': (rng) => {
    const line = pick(rng, [
      () => `${pick(rng, METHODS)} ${pick(rng, PATHS)} ${pick(rng, VERSIONS)}`,
      () => `${pick(rng, METHODS)}`,
      () => `GET  /status  HTTP/1.1`,
      () => `GET /sta tus HTTP/1.1`,
      () => `GET\t/status\tHTTP/1.1`,
      () => bytes(rng, 1 + int(rng, 200)).toString('latin1'),
      () => `\r\n\r\nGET /healthz HTTP/1.1`,
    ])();
    return { chunks: [b(`${line}\r\nHost: localhost\r\n\r\n`)], requests: 1 };
  },
  'binary garbage': (rng) => ({ chunks: [bytes(rng, 1 + int(rng, 4096))], requests: 1 }),
  'method and path': (rng) => ({ chunks: [b(req(pick(rng, METHODS), pick(rng, PATHS), []))], requests: 1 }),
  'huge header': (rng) => {
    const size = pick(rng, [8000, 9000, 16_384, 65_536, 262_144]);
    return { chunks: [b(req('GET', '/healthz', [`X-Big: ${'a'.repeat(size)}`]))], requests: 1 };
  },
  'many headers': (rng) => ({
    chunks: [
      b(
        req(
          'GET',
          '/status',
          Array.from({ length: 100 + int(rng, 2000) }, (_, i) => `X-H${i}: v`),
        ),
      ),
    ],
    requests: 1,
  }),
  'huge URL': (rng) => ({
    chunks: [b(req('GET', '/' + 'a'.repeat(pick(rng, [1025, 4000, 9000, 100_000])), []))],
    requests: 1,
  }),
  'bad header': (rng) => ({
    chunks: [
      b(
        req('GET', '/healthz', [
          pick(rng, [
            'Bad Header: x',
            ': empty-name',
            'X-A:\x00nul',
            'X-A: \r x',
            'No-Colon',
            ' Folded: x',
            'X-A: a\r\n continued',
            'Host: a',
            'Host: a\r\nHost: b',
            'X-\x7f: y',
          ]),
        ]),
      ),
    ],
    requests: 1,
  }),
  smuggling: (rng) => {
    const v = pick(rng, [
      ['Content-Length: 5', 'Transfer-Encoding: chunked'],
      ['Content-Length: 5', 'Content-Length: 6'],
      ['Transfer-Encoding: xchunked'],
      ['Transfer-Encoding: chunked, identity'],
      ['Transfer-Encoding : chunked'],
      ['Transfer-Encoding:\tchunked', 'Content-Length: 3'],
      ['Content-Length: -1'],
      ['Content-Length: 1e3'],
      ['Content-Length: 99999999999999999999'],
      ['Transfer-Encoding: chunked'],
    ]);
    const body = v.some((h) => /chunked/.test(h))
      ? pick(rng, [
          '0\r\n\r\nGET /status HTTP/1.1\r\nHost: x\r\n\r\n',
          'ffffffffffffffff\r\nx\r\n',
          '5;ext=' + 'e'.repeat(5000) + '\r\nhello\r\n0\r\n\r\n',
          'zz\r\n',
          '1\nX\n0\n\n',
        ])
      : 'GET /status HTTP/1.1\r\nHost: x\r\n\r\n';
    return { chunks: [b(req(pick(rng, ['GET', 'POST']), '/healthz', v, body))], requests: 2 };
  },
  pipelining: (rng) => {
    const n = 2 + int(rng, 30);
    const text = Array.from({ length: n }, () =>
      req(pick(rng, ['GET', 'HEAD', 'POST', 'GET']), pick(rng, PATHS.slice(0, 5)), []),
    ).join('');
    return { chunks: [b(text)], requests: n };
  },
  'bare LF and split writes': (rng) => {
    const text = req('GET', '/status', []).replaceAll('\r\n', pick(rng, ['\n', '\r', '\r\n']));
    const cut = 1 + int(rng, text.length - 1);
    return { chunks: [b(text.slice(0, cut)), b(text.slice(cut))], requests: 1 };
  },
  'abrupt close': (rng) => {
    const text = req('GET', pick(rng, PATHS.slice(0, 3)), []);
    return { chunks: [b(text.slice(0, int(rng, text.length + 1)))], requests: 1, abrupt: true };
  },
  'unread body': (rng) => ({
    chunks: [b(req('GET', '/healthz', ['Content-Length: 100000'], 'x'.repeat(int(rng, 1000))))],
    requests: 1,
    abrupt: rng() < 0.5,
  }),
};

export const KINDS = Object.keys(MAKERS);

export function hostileCase(rng: Rng): HostileCase {
  const kind = pick(rng, KINDS);
  const made = MAKERS[kind]!(rng);
  return { kind, chunks: made.chunks, requests: made.requests, abrupt: made.abrupt ?? rng() < 0.1 };
}

/**
 * Sends one case and ends when the server closed, answered and went quiet, or after
 * `boundMs` (a safety net: the server's own timeouts close a half request). Never throws:
 * a reset or a refused connection is the server's right.
 */
export function sendCase(socket: string, c: HostileCase, boundMs = 5000): Promise<void> {
  return new Promise((resolve) => {
    const conn = net.connect(socket);
    const done = () => {
      clearTimeout(timer);
      conn.destroy();
      resolve();
    };
    const timer = setTimeout(done, boundMs);
    conn.on('error', done).on('close', done);
    conn.on('data', () => undefined);
    conn.once('connect', () => {
      let i = 0;
      const next = (): void => {
        const chunk = c.chunks[i++];
        if (chunk === undefined) {
          if (c.abrupt) done();
          else conn.end();
          return;
        }
        conn.write(chunk, () => setImmediate(next));
      };
      next();
    });
  });
}

export interface FloodResult {
  cases: number;
  requests: number;
  byKind: Record<string, number>;
}

/** Sends `count` cases, `concurrency` at a time, in bursts of `burst`; `afterBurst` runs between bursts. */
export async function flood(
  socket: string,
  rng: Rng,
  opts: { count: number; concurrency: number; burst: number; afterBurst: (sent: number) => Promise<void> },
): Promise<FloodResult> {
  const result: FloodResult = { cases: 0, requests: 0, byKind: {} };
  while (result.cases < opts.count) {
    const batch = Array.from({ length: Math.min(opts.burst, opts.count - result.cases) }, () => hostileCase(rng));
    for (let i = 0; i < batch.length; i += opts.concurrency) {
      await Promise.all(batch.slice(i, i + opts.concurrency).map((c) => sendCase(socket, c)));
    }
    for (const c of batch) {
      result.cases++;
      result.requests += c.requests;
      result.byKind[c.kind] = (result.byKind[c.kind] ?? 0) + 1;
    }
    await opts.afterBurst(result.cases);
  }
  return result;
}

/** One GET over a fresh connection, answered or not within boundMs. */
export function get(socket: string, path: string, boundMs = 5000): Promise<{ code: number; body: string }> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket);
    let text = '';
    const timer = setTimeout(() => {
      conn.destroy();
      reject(new Error(`no answer to GET ${path} within ${boundMs} ms`));
    }, boundMs);
    conn.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    conn.on('data', (d: Buffer) => (text += d.toString('latin1')));
    conn.on('close', () => {
      clearTimeout(timer);
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (!m) return reject(new Error(`no HTTP answer to GET ${path}: ${JSON.stringify(text.slice(0, 200))}`));
      resolve({ code: Number(m[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
    conn.once('connect', () => conn.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`));
  });
}

/** Connections that open, send part of a header, and then say nothing. */
export async function slowClients(socket: string, n: number): Promise<net.Socket[]> {
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const c = net.connect(socket);
          c.on('error', () => undefined);
          c.once('connect', () => {
            c.write('GET /status HTTP/1.1\r\nHost: local');
            resolve(c);
          });
          c.once('error', reject);
        }),
    ),
  );
}
