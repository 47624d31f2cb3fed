// `ovn-gwmode-agent run`: the imperative shell around the owner loop. It wires the
// kernel, the mode file, /proc, the status socket, systemd and the signals.
//
// Signals: SIGTERM/SIGINT stop (STOPPING=1, the pass under way and a restart request on
// its way are awaited for at most STOP_GRACE_MS and then abandoned, the socket removed,
// exit 0: a CRI stop, which waits out the grace period, is cancelled); SIGHUP reloads the
// settings (flags, environment, ovnkube.conf) and the mode file.
import type { Logger } from 'pino';
import { resolveSettings, type RawRunOptions, type Settings } from '../config/settings.js';
import type { Dataplane } from '../dataplane/types.js';
import { ModeReader, watchModeSource } from '../mode/source.js';
import { StatusServer } from '../status/server.js';
import { Supervisor } from '../systemd/supervisor.js';
import type { Notifier } from '../systemd/notify.js';
import { Agent, type AgentOptions } from './agent.js';
import { OvnkubeExitSignal } from '../ovnkube/exit-signal.js';
import { missingCapabilities } from './capabilities.js';
import type { OvnkubeProbe } from './observe.js';
import type { PlannerConfig } from '../core/types.js';
import type { Clock } from '../clock.js';
import { Journal } from '../restart/journal.js';
import { readBootId } from '../restart/journal-time.js';
import { CriRestart, criDeadlineMs, NoRestart, SignalRestart, type RestartStrategy } from '../restart/strategy.js';
import { recorders } from '../core/recorder.js';
import { EventHistory } from '../events/history.js';
import { serveEvents } from '../events/http.js';
import { WatchHub } from '../events/watch.js';
import { parseListenAddress } from '../metrics/address.js';
import { AgentMetrics } from '../metrics/metrics.js';
import { MetricsListener, serveMetrics } from '../metrics/server.js';
import { VERSION } from '../version.js';

function strategyFor(s: Settings, stuckAfterMs: number): RestartStrategy {
  switch (s.restart) {
    case 'cri':
      return new CriRestart({ endpoint: s.criEndpoint ?? undefined, namespace: s.ovnkubeNamespace, container: s.ovnkubeContainer, graceSeconds: Math.ceil(s.restartGraceMs / 1000), deadlineMs: criDeadlineMs(stuckAfterMs) });
    case 'signal':
      return new SignalRestart();
    case 'none':
      return new NoRestart();
  }
}

/** Settings a reload cannot change: the socket, and what the restart coordinator was built with. */
const FIXED_AT_START = [
  'socket',
  'socketGroup',
  'stateDir',
  'restart',
  'criEndpoint',
  'ovnkubeNamespace',
  'ovnkubeContainer',
  'restartGraceMs',
  'restartMinIntervalMs',
  'restartMaxPerHour',
  'restartTimeoutMs',
  'settleMs',
  'metricsAddress',
] as const;

/** Bounded so that a stop always ends well inside systemd's 10 s expectation. */
const STOP_GRACE_MS = 5000;

export interface DaemonDeps {
  log: Logger;
  dataplane: Dataplane;
  notifier: Notifier;
  watchdogUsec: number | undefined;
  plannerConfig: (s: Settings) => PlannerConfig;
  probeFor: (s: Settings) => OvnkubeProbe;
  clock: Clock;
  /** The journal in the state directory; tests wrap it to inject crashes. */
  journal?: (dir: string) => Journal;
  /** Gives freed memory back to the kernel (the addon's malloc_trim): true, false, or null where not glibc. */
  trimMemory?: () => Promise<boolean | null>;
  exit: (code: number) => void;
}

function agentOptions(s: Settings, config: PlannerConfig): AgentOptions {
  return {
    config,
    modePath: s.modeFile,
    resyncIntervalMs: s.resyncIntervalMs,
    restart: {
      strategy: s.restart,
      limit: { minIntervalMs: s.restartMinIntervalMs, maxPerHour: s.restartMaxPerHour },
      timeoutMs: s.restartTimeoutMs,
      settleMs: s.settleMs,
      retryBaseMs: 5000,
      retryMaxMs: s.restartMinIntervalMs,
      modeChecked: s.ovnkubeModeCheck === 'proc',
    },
  };
}

export async function runDaemon(raw: RawRunOptions, initial: Settings, deps: DaemonDeps): Promise<Agent> {
  const { log, dataplane } = deps;
  let settings = initial;
  let probe = deps.probeFor(settings);
  const supervisor = new Supervisor(deps.notifier, log.child({ component: 'systemd' }), deps.watchdogUsec, deps.clock);
  const strategy = strategyFor(settings, supervisor.stuckAfterMs());
  const watchMode = (path: string) => (onChange: () => void) => watchModeSource(path, onChange);
  // One reader per path: it remembers what it saw of a file being written.
  // Wall time to compare with the file's mtime, the monotonic clock for how long it stayed unchanged.
  const modeReaderFor = (file: string) => new ModeReader(file, () => deps.clock.wall(), () => deps.clock.now());
  let modeReader = modeReaderFor(settings.modeFile);
  const readMode = () => {
    if (modeReader.source !== settings.modeFile) modeReader = modeReaderFor(settings.modeFile);
    return modeReader.read();
  };
  const missing = await missingCapabilities();
  for (const m of missing) log.warn(m);
  const metrics = new AgentMetrics({ version: VERSION, strategy: strategy.name });
  const history = new EventHistory(deps.clock, log.child({ component: 'events' }));
  let trimming = false;
  const agent = new Agent(
    {
      dataplane,
      strategy,
      journal: (deps.journal ?? ((dir) => new Journal(dir)))(settings.stateDir),
      probe: (hint) => probe(hint),
      log: log.child({ component: 'agent' }),
      readMode,
      watchMode: watchMode(settings.modeFile),
      clock: deps.clock,
      bootId: readBootId(),
      random: Math.random,
      missing,
      recorder: recorders([metrics, history], (err) => log.error({ err }, 'a recorder failed')),
      // A rollout's new ovnkube-node is acted on within tens of ms, not at the next look.
      ovnkubeExit: (wake) => new OvnkubeExitSignal(wake, log.child({ component: 'ovnkube-exit' })),
      // Memory freed after a burst of work (V8's compile jobs on its worker thread above all)
      // stays in malloc's arenas until trimmed (native/src/memory.c): once per periodic resync,
      // after its pass, off the event loop (libuv's pool), and with no wake-up of its own.
      atRest: () => {
        if (!deps.trimMemory || trimming) return;
        trimming = true;
        const started = performance.now();
        const trim = deps.trimMemory;
        // A throw of the call itself becomes a rejection: the flag is always cleared.
        void Promise.resolve()
          .then(() => trim())
          .then(
            (released) => {
              if (released !== null) log.debug({ released, ms: Math.round((performance.now() - started) * 100) / 100 }, 'malloc arenas trimmed');
            },
            (err: unknown) => log.error({ err }, 'malloc_trim failed'),
          )
          .finally(() => (trimming = false))
          .catch(() => undefined);
      },
    },
    agentOptions(settings, deps.plannerConfig(settings)),
  );
  await agent.init();
  const watch = new WatchHub(history, () => agent.status());
  // What GET /status serves changes only with a pass or a reload: it is serialised once per change.
  let statusVersion = 0;
  agent.onStatus(() => statusVersion++);
  // Throws SocketInUseError before anything is touched when another agent is live.
  const server = await StatusServer.listen(settings.socket, {
    status: () => agent.status(),
    statusVersion: () => statusVersion,
    alive: () => !supervisor.isStuck(agent),
    ready: () => agent.isReady(),
    extra: {
      '/metrics': (req, res) => serveMetrics(metrics, req, res),
      '/v1/events': (req, res) => serveEvents(history, req, res),
      '/v1/watch': (req, res) => watch.serve(req, res),
    },
  }, { group: settings.socketGroup });
  // Each view is told apart: one that throws must not silence the others, nor the loop.
  agent.onStatus((s) => {
    for (const view of [metrics, history, watch]) {
      try {
        view.onStatus(s);
      } catch (err) {
        log.error({ err }, 'a status view failed');
      }
    }
  });
  let metricsListener: MetricsListener | undefined;
  if (settings.metricsAddress !== null) {
    try {
      metricsListener = await MetricsListener.listen(parseListenAddress(settings.metricsAddress), metrics);
    } catch (err) {
      await server.close();
      throw err;
    }
    log.info({ address: settings.metricsAddress }, 'serving /metrics over TCP');
  }
  agent.onStatus((s) => supervisor.onStatus(s, agent.isReady()));
  log.info({ settings: { ...settings, serviceCidrs: settings.serviceCidrs.map((c) => c.text) } }, 'starting');
  agent.start();
  supervisor.start(agent);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    supervisor.stopping();
    let timer: NodeJS.Timeout | undefined;
    const abandoned = await Promise.race([
      agent.stop().then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), STOP_GRACE_MS))),
    ]);
    clearTimeout(timer);
    if (abandoned && agent.waitingOn() === 'restart') {
      // A CRI stop waits out ovnkube-node's grace period (30 s): longer than this.
      log.warn(
        { graceMs: STOP_GRACE_MS },
        'a restart request is still under way: exiting cancels the call; the journal keeps it as requested, and the next agent waits up to --restart-timeout for a new ovnkube-node (asking again only if the same one still runs)',
      );
    } else if (abandoned) {
      log.warn({ graceMs: STOP_GRACE_MS }, 'the pass under way did not finish: abandoning it');
    }
    await server.close();
    await metricsListener?.close();
    strategy.close();
    dataplane.close();
    log.info('stopped');
    log.flush();
    deps.exit(0);
  };

  let reloading: Promise<void> = Promise.resolve();
  const reload = async () => {
    supervisor.reloading();
    log.info('reloading configuration');
    try {
      const next = await resolveSettings(raw);
      // The socket and the restart machinery are built once; say so rather than pretend.
      const kept: Partial<Settings> = {};
      for (const key of FIXED_AT_START) {
        if (next[key] === settings[key]) continue;
        log.warn({ setting: key, running: settings[key], ignored: next[key] }, `a new ${key} takes effect only when the agent restarts`);
        Object.assign(kept, { [key]: settings[key] });
      }
      settings = { ...next, ...kept };
      probe = deps.probeFor(settings);
    } catch (err) {
      log.error({ err }, 'reload failed: keeping the running configuration');
    }
    await agent.reconfigure(agentOptions(settings, deps.plannerConfig(settings)), watchMode(settings.modeFile));
    statusVersion++;
    supervisor.onStatus(agent.status(), true);
  };

  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => {
    // A reload that fails keeps the agent running as it was: never a fatal rejection.
    reloading = reloading.then(reload).catch((err: unknown) => log.error({ err }, 'reload failed'));
  });
  return agent;
}
