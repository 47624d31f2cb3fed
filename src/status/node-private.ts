// The one use of Node's private state in the agent: the interval timer with which an
// http.Server checks its connections' headers and request timeouts.
//
// Node keeps it on the server under a symbol of lib/_http_server.js:
//   const kConnectionsCheckingInterval = Symbol('http.server.connectionsCheckingInterval');
// set on every 'listening' (`setInterval(checkConnections.bind(this), ...).unref()`, since
// nodejs/node 8874b2e11d, PR 48611; in the constructor before) and cleared by close(). Seen
// in Node 20.20.2's embedded lib/_http_server.js (line 182, set at 513, cleared at 509 and
// 519) and in nodejs/node's lib/_http_server.js at 0012a7750 (main, after v24); the option
// and its interval came with Node 18.0.0. A timer's callback is its private `_onTimeout`
// (lib/internal/timers.js), which clearInterval drops, so it is taken first.
//
// Why touch it at all: Node runs that check from listen to close, connections or not, a
// wake-up every interval of an agent at rest (server.ts, point 4). Pausing it while no
// connection is open keeps the check itself Node's. When a Node no longer has the timer
// where expected, nothing is paused: the check runs as Node runs it, the agent only
// wakes more often, and the status server says so once (StatusServer).
// test/status/node-private.test.ts fails on a Node that moved or renamed either.
import type http from 'node:http';

/** The description of Node's symbol (lib/_http_server.js, kConnectionsCheckingInterval). */
export const CONNECTIONS_CHECK_SYMBOL = 'http.server.connectionsCheckingInterval';

type Timer = NodeJS.Timeout & { _onTimeout?: unknown };

/** Node's connection-check timer of a listening server, or why it is not where expected. */
export function findConnectionsCheck(
  server: object,
): { symbol: symbol; timer: Timer; check: () => void } | { missing: string } {
  const symbol = Object.getOwnPropertySymbols(server).find((s) => s.description === CONNECTIONS_CHECK_SYMBOL);
  if (!symbol) return { missing: `the server has no symbol '${CONNECTIONS_CHECK_SYMBOL}'` };
  const timer = (server as Record<symbol, unknown>)[symbol] as Timer | undefined;
  if (!timer || typeof timer._onTimeout !== 'function')
    return { missing: `'${CONNECTIONS_CHECK_SYMBOL}' holds no timer with an _onTimeout callback` };
  return { symbol, timer, check: timer._onTimeout as () => void };
}

/** Pauses and resumes Node's check of a server's connections, where this Node has it. */
export class PausableConnectionsCheck {
  private paused: { symbol: symbol; check: () => void } | undefined;

  constructor(
    private readonly server: http.Server,
    private readonly intervalMs: number,
  ) {}

  /** Stops the check; the reason it could not when Node keeps it elsewhere (it then runs as Node's). */
  pause(): string | undefined {
    if (this.paused || !this.server.listening) return undefined;
    const found = findConnectionsCheck(this.server);
    if ('missing' in found) return found.missing;
    this.paused = { symbol: found.symbol, check: found.check };
    clearInterval(found.timer);
    return undefined;
  }

  resume(): void {
    const paused = this.paused;
    if (!paused) return;
    this.paused = undefined;
    // server.close() clears whatever timer this property holds, so the new one goes there.
    (this.server as unknown as Record<symbol, unknown>)[paused.symbol] = setInterval(
      paused.check,
      this.intervalMs,
    ).unref();
  }
}
