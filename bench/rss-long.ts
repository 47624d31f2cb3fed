// Benchmark: the daemon's footprint as a long-running process serves its probes
// (docs/benchmarks.md, "The footprint after serving probes for a while"). Run as root:
// `npm run bench:rss` (STEPS, default
// 200,1000,3000,10000,20000; AGENT_ROOT, another build to measure beside this one, its runs
// interleaved; RUNS, default 2).
// A converged agent on the seed's node in a throwaway namespace, with the shipped node flags
// and `--resync-interval 2`; GET /readyz and /status by turns over one keep-alive connection
// (what kubelet's probes and an admin's status do over hours), and after each step's count,
// 2.5 s later (a periodic resync between), VmRSS with its anonymous and file-backed parts
// from /proc/PID/status. Beside it, in the same run: a plain node HTTP server on a UNIX
// socket, with the same node flags, after the same requests.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { withNode } from '../test/helpers/agent.js';
import { terminate } from '../src/demo/process.js';
import { socketGet, statusKb } from './socket-get.js';

const STEPS = (process.env.STEPS ?? '200,1000,3000,10000,20000').split(',').map(Number);
const RUNS = Number(process.env.RUNS ?? 2);
const FLAGS = ['--max-semi-space-size=1', '--v8-pool-size=1'];
const here = fileURLToPath(new URL('../..', import.meta.url));
const roots = [here, ...(process.env.AGENT_ROOT ? [process.env.AGENT_ROOT] : [])];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function memory(pid: number): string {
  const mb = (k: string) => (statusKb(pid, k) / 1024).toFixed(1);
  return `${mb('VmRSS')} (anon ${mb('RssAnon')}, file ${mb('RssFile')})`;
}

/** Requests in steps; the memory after each step, 2.5 s later. */
async function measure(child: ChildProcess, socket: string): Promise<string[]> {
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const out: string[] = [];
  let n = 0;
  for (const upto of STEPS) {
    for (; n < upto; n++) await socketGet(socket, n % 2 ? '/status' : '/readyz', keepAlive);
    await sleep(2500);
    out.push(`${upto}: ${memory(child.pid!)}`);
  }
  keepAlive.destroy();
  return out;
}

async function main(): Promise<void> {
  // A quiet node: the mode file says shared, ovnkube-node runs shared, the route is shared.
  await withNode({ gw0: true }, async ({ ns, scratch, ovnkube }) => {
    scratch.writeMode('shared');
    ovnkube.start('shared');
    console.log(`node ${process.version} ${FLAGS.join(' ')}; VmRSS in MB after N requests, 2.5 s later`);
    const plainSocket = path.join(scratch.dir, 'plain.sock');
    const plain = spawn(
      'ip',
      [
        'netns',
        'exec',
        ns.name,
        process.execPath,
        ...FLAGS,
        '-e',
        `require('node:http').createServer((q, s) => s.end('ok')).listen(${JSON.stringify(plainSocket)})`,
      ],
      { stdio: 'ignore' },
    );
    while ((await socketGet(plainSocket, '/')) !== 200) await sleep(5);
    console.log(`plain node HTTP server: ${(await measure(plain, plainSocket)).join('; ')}`);
    await terminate(plain);
    for (let run = 0; run < RUNS; run++) {
      for (const root of run % 2 ? [...roots].reverse() : roots) {
        rmSync(scratch.socket, { force: true });
        const cli = path.join(root, 'dist', 'src', 'cli', 'main.js');
        const child = spawn(
          'ip',
          [
            'netns',
            'exec',
            ns.name,
            process.execPath,
            ...FLAGS,
            cli,
            'run',
            '--mode-file',
            scratch.modeFile,
            '--socket',
            scratch.socket,
            '--state-dir',
            scratch.stateDir,
            '--service-cidr',
            '10.96.0.0/16',
            '--mtu',
            '1400',
            '--restart',
            'cri',
            '--settle',
            '0',
            '--resync-interval',
            '2',
          ],
          { stdio: 'ignore' },
        );
        while ((await socketGet(scratch.socket, '/readyz')) !== 200) await sleep(5);
        console.log(`agent ${root}: ${(await measure(child, scratch.socket)).join('; ')}`);
        await terminate(child);
      }
    }
  });
}

await main();
