// The agent's command line with V8's CPU profiler on, for bench/socket-abuse.ts
// (CPU_PROF=DIR): --cpu-prof is not allowed in NODE_OPTIONS, and the test helpers spawn
// the agent's entry point. The profile is written to DIR as the process exits.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';

const dir = process.env.CPU_PROF_DIR ?? '.';
const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: 500 });
session.post('Profiler.start');
// A main-thread session answers synchronously, so this runs to the end inside 'exit'.
process.on('exit', () =>
  session.post('Profiler.stop', (err, r) => {
    if (!err) writeFileSync(path.join(dir, `agent-${process.pid}.cpuprofile`), JSON.stringify(r.profile));
  }),
);
await import('../src/cli/main.js');
