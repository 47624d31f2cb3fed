// Drives test/fixtures/dataplane-probe.js inside a namespace: the dataplane runs in
// a process of its own in the namespace, and the test talks to it line by line.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import readline from 'node:readline';
import type { Netns } from './netns.js';

const probePath = fileURLToPath(new URL('../fixtures/dataplane-probe.js', import.meta.url));

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

export class Probe {
  private readonly child: ChildProcessWithoutNullStreams;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly events: ProbeEvent[] = [];
  private eventWaiters: Array<() => void> = [];
  stderr = '';

  /** prefix: a command line put before node, e.g. setpriv with dropped capabilities. */
  constructor(ns: Netns, prefix: string[] = []) {
    this.child = spawn('ip', ['netns', 'exec', ns.name, ...prefix, process.execPath, probePath]);
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => this.onLine(line));
    this.child.on('exit', () => {
      for (const w of this.waiting.values()) w.reject(new Error(`probe exited: ${this.stderr}`));
      this.waiting.clear();
    });
  }

  private onLine(line: string): void {
    const msg = JSON.parse(line) as { id?: number; result?: unknown; error?: Record<string, unknown>; event?: ProbeEvent };
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
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.stdin.write(JSON.stringify({ id, op, args }) + '\n');
    });
  }

  /** Resolves when an event matching pred has arrived (already or later). */
  async waitForEvent(pred: (e: ProbeEvent) => boolean): Promise<ProbeEvent> {
    for (;;) {
      const found = this.events.find(pred);
      if (found) return found;
      await new Promise<void>((r) => this.eventWaiters.push(r));
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve();
      this.child.on('exit', () => resolve());
      this.child.stdin.end();
    });
  }
}
