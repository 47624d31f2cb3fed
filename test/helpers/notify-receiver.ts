// A real AF_UNIX datagram receiver (python3, since Node cannot receive datagrams on
// AF_UNIX either), standing in for systemd's notify socket.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import readline from 'node:readline';

const script = fileURLToPath(new URL('../../../test/fixtures/notify-receiver.py', import.meta.url));

export class NotifyReceiver {
  readonly messages: string[] = [];
  private readonly child: ChildProcess;
  private waiters: Array<() => void> = [];
  readonly listening: Promise<void>;

  constructor(readonly address: string) {
    this.child = spawn('python3', [script, address], { stdio: ['ignore', 'pipe', 'inherit'] });
    let ready!: () => void;
    this.listening = new Promise((r) => (ready = r));
    readline.createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (line === 'listening') return ready();
      this.messages.push(JSON.parse(line) as string);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Resolves with the index of the first message at or after `from` that matches. */
  async waitFor(pred: (m: string) => boolean, from = 0, what = 'a notification'): Promise<number> {
    for (let round = 0; ; round++) {
      const i = this.messages.findIndex((m, idx) => idx >= from && pred(m));
      if (i >= 0) return i;
      if (round > 2000) throw new Error(`never received ${what}; got ${JSON.stringify(this.messages.slice(-20))}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  close(): void {
    this.child.kill();
  }
}
