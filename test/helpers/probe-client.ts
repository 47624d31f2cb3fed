// Drives test/fixtures/dataplane-probe.js inside a namespace: the dataplane runs in
// a process of its own in the namespace, and the test talks to it line by line.
// Every wait here has a time limit: a probe that hangs fails the test, it never
// hangs the suite.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import readline from 'node:readline';
import type { Netns } from './netns.js';

const probePath = fileURLToPath(new URL('../fixtures/dataplane-probe.js', import.meta.url));

/** Generous: a call may dump a large table on a slow CI machine. */
const CALL_LIMIT_MS = 60_000;
const EVENT_LIMIT_MS = 10_000;

export interface ProbeEvent {
  kind: string;
  [key: string]: unknown;
}

export class ProbeError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly errno: number | undefined,
    readonly extAck: string | undefined,
  ) {
    super(message);
  }
}

export interface ProbeOptions {
  /** A command line put before node, e.g. setpriv with dropped capabilities. */
  prefix?: string[];
  /** Receive buffer of the probe's subscription socket. */
  subscriptionBuffer?: number;
}

export class Probe {
  private readonly child: ChildProcessWithoutNullStreams;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly events: ProbeEvent[] = [];
  private eventWaiters: Array<() => void> = [];
  stderr = '';

  constructor(ns: Netns, options: ProbeOptions = {}) {
    const config = JSON.stringify({ subscriptionBuffer: options.subscriptionBuffer });
    this.child = spawn('ip', [
      'netns',
      'exec',
      ns.name,
      ...(options.prefix ?? []),
      process.execPath,
      probePath,
      config,
    ]);
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => this.onLine(line));
    this.child.on('exit', () => {
      for (const w of this.waiting.values()) w.reject(new Error(`probe exited: ${this.stderr}`));
      this.waiting.clear();
    });
  }

  private onLine(line: string): void {
    const msg = JSON.parse(line) as {
      id?: number;
      result?: unknown;
      error?: Record<string, unknown>;
      event?: ProbeEvent;
    };
    if (msg.event) {
      this.events.push(msg.event);
      for (const w of this.eventWaiters.splice(0)) w();
      return;
    }
    const w = msg.id === undefined ? undefined : this.waiting.get(msg.id);
    if (!w || msg.id === undefined) return;
    this.waiting.delete(msg.id);
    if (msg.error) {
      const e = msg.error;
      w.reject(new ProbeError(String(e.message), e.code as string, e.errno as number, e.extAck as string));
    } else w.resolve(msg.result);
  }

  call<T>(op: string, ...args: unknown[]): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`probe call ${op} got no answer in ${CALL_LIMIT_MS} ms; stderr: ${this.stderr}`));
      }, CALL_LIMIT_MS);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.child.stdin.write(JSON.stringify({ id, op, args }) + '\n');
    });
  }

  /**
   * Resolves with the first event matching pred among those received from index
   * `from` on (already or later); rejects when none came within the limit.
   */
  async waitForEvent(pred: (e: ProbeEvent) => boolean, from = 0, limitMs = EVENT_LIMIT_MS): Promise<ProbeEvent> {
    const deadline = Date.now() + limitMs;
    for (;;) {
      const found = this.events.slice(from).find(pred);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`no matching event in ${limitMs} ms; got ${JSON.stringify(this.events.slice(from))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.eventWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve();
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      this.child.on('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      this.child.stdin.end();
    });
  }
}
