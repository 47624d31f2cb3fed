// The CLI's command lines run in one process inside a node's namespace
// (test/fixtures/command-lines.ts): a table of many one-shot commands pays for Node's start once.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { CommandResult } from '../../src/cli/exit-codes.js';
import type { Netns } from './netns.js';

const RUNNER = fileURLToPath(new URL('../fixtures/command-lines.js', import.meta.url));

export function commandLines(ns: Netns) {
  const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, RUNNER], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let logs = '';
  child.stderr.on('data', (d: Buffer) => (logs = (logs + d.toString()).slice(-4000)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    async run(args: string[]): Promise<CommandResult> {
      child.stdin.write(JSON.stringify(args) + '\n');
      const next = await lines.next();
      if (next.done) throw new Error(`the command-line runner ended; its stderr:\n${logs}`);
      return JSON.parse(next.value) as CommandResult;
    },
    close: () => child.stdin.end(),
  };
}
