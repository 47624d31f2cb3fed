// Experiment: where the agent's RSS goes after 200 /status, per start (smaps), and what
// TurboFan compiled before ready (--trace-opt). Root, under the bench's quiet node.
// ROOTS=a,b RUNS=n TRACE=1 node bench/bundle/probe.mjs   (process.execPath runs the agent)
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { FakeOvnkube, Scratch } from '../../dist/test/helpers/agent.js';
import { seedNode } from '../../dist/test/helpers/netns.js';

const ROOTS = process.env.ROOTS.split(',');
const RUNS = Number(process.env.RUNS ?? 4);
const TRACE = !!process.env.TRACE;
const FLAGS = ['--max-semi-space-size=1', '--v8-pool-size=1', ...(TRACE ? ['--trace-opt'] : [])];
const RESTART = process.env.RESTART ?? 'signal';
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
const get = (socket, p) => new Promise((resolve) => {
  const req = http.get({ socketPath: socket, path: p }, (res) => { let b = ''; res.on('data', (d) => (b += d)); res.on('end', () => resolve([res.statusCode, b])); });
  req.on('error', () => resolve([0, '']));
});
function smaps(pid) {
  const text = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  let cur = null; const acc = { anon: 0, file: 0, nodeText: 0, node: 0 };
  for (const line of text.split('\n')) {
    const h = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (h) { cur = { perms: h[1], inode: h[2], name: h[3] }; continue; }
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r && cur) {
      const kb = Number(r[1]);
      if (cur.inode === '0') acc.anon += kb; else acc.file += kb;
      if (cur.name.endsWith('/bin/node')) { acc.node += kb; if (cur.perms.includes('x')) acc.nodeText += kb; }
    }
  }
  return acc;
}
const mb = (kb) => (kb / 1024).toFixed(1);
const ns = seedNode({ gw0: true });
const scratch = new Scratch();
const ovnkube = new FakeOvnkube(ns, scratch.dir);
try {
  scratch.writeMode('shared');
  ovnkube.start('shared');
  for (let i = 0; i < RUNS; i++) {
    for (let k = 0; k < ROOTS.length; k++) {
      const [root, envText] = ROOTS[(i + k) % ROOTS.length].split('|');
      const env = envText ? { ...process.env, ...Object.fromEntries([envText.split('=')]) } : process.env;
      const cli = path.join(root, 'dist/src/cli/main.js');
      const t0 = performance.now();
      const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, ...FLAGS, cli, 'run', '--mode-file', scratch.modeFile, '--socket', scratch.socket, '--state-dir', scratch.stateDir, '--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--restart', RESTART], { stdio: ['ignore', 'pipe', 'pipe'], env });
      let out = ''; let err = '';
      child.stdout.on('data', (d) => (out += d)); child.stderr.on('data', (d) => (err += d));
      for (;;) {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${err}`);
        if ((await get(scratch.socket, '/readyz'))[0] === 200) break;
        await pause(1);
      }
      const ready = performance.now() - t0;
      const atReady = out;
      let last;
      for (let n = 0; n < 200; n++) last = await get(scratch.socket, '/status');
      await pause(1000);
      const pid = child.pid;
      const s = smaps(pid);
      const rss = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
      const turbo = TRACE ? [...atReady.matchAll(/completed compiling (?:method )?0x[0-9a-f]+ <JSFunction ?([^ >(]*) ?\(sfi = \w+\)> \(target (\w+)\)/g)].filter((m) => m[2] .startsWith('TURBOFAN')).map((m) => m[1]) : [];
      const traceAll = TRACE ? [...atReady.matchAll(/completed compiling (?:method )?0x[0-9a-f]+ <JSFunction ?([^ >(]*) ?\(sfi = \w+\)> \(target (\w+)\)/g)].map((m) => `${m[1]}:${m[2]}`) : [];
      const turboAll = TRACE ? [...out.matchAll(/completed compiling (?:method )?0x[0-9a-f]+ <JSFunction ?([^ >(]*) ?\(sfi = \w+\)> \(target (\w+)\)/g)].filter((m) => m[2].startsWith('TURBOFAN')).map((m) => m[1]) : [];
      console.log(`${(root + (envText ? ' ' + envText : '')).padEnd(42)} ready ${ready.toFixed(0)} ms  VmRSS ${mb(rss)}  anon ${mb(s.anon)}  file ${mb(s.file)}  node binary ${mb(s.node)} (text ${mb(s.nodeText)})  status ${last[0]} ${last[1].length}B${TRACE ? `  turbofan before ready: [${turbo.join(' ')}] all: ${traceAll.length}; turbofan by the measurement: [${turboAll.join(' ')}]` : ''}`);
      if (TRACE && process.env.TRACE_DUMP) console.log('   ', traceAll.join(' '));
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    }
  }
} finally {
  ovnkube.stop();
  ns.destroy();
  scratch.remove();
}
