// The parts the daemon (daemon.ts) is composed of, each owning what used to be a mutable
// variable of one long function: the settings in force and the views.
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { PlannerConfig } from '../core/types.js';
import { resolveSettings, type RawRunOptions, type Settings } from '../config/settings.js';
import { EventHistory } from '../events/history.js';
import { WatchHub } from '../events/watch.js';
import { AgentMetrics } from '../metrics/metrics.js';
import { ModeReader, watchModeSource, type ModePending, type ModeRead, type ModeWatch } from '../mode/source.js';
import type { StatusReport } from '../status/report.js';
import { VERSION } from '../version.js';
import type { AgentOptions } from './agent.js';
import type { OvnkubeProbe } from './observe.js';

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

export interface LiveSettingsDeps {
  log: Logger;
  clock: Clock;
  plannerConfig: (s: Settings) => PlannerConfig;
  probeFor: (s: Settings) => OvnkubeProbe;
}

/** The settings in force and what is built from them (the /proc probe, the mode reader); a reload replaces them. */
export class LiveSettings {
  private settings: Settings;
  private probeNow: OvnkubeProbe;
  /** One reader per path: it remembers what it saw of a file being written. */
  private reader: ModeReader;

  constructor(
    initial: Settings,
    private readonly deps: LiveSettingsDeps,
  ) {
    this.settings = initial;
    this.probeNow = deps.probeFor(initial);
    this.reader = this.readerFor(initial.modeFile);
  }

  get current(): Settings {
    return this.settings;
  }

  /** The probe of the settings in force, whichever they are when it is called. */
  readonly probe: OvnkubeProbe = (hint) => this.probeNow(hint);

  readonly readMode = (): Promise<ModeRead | ModePending> => {
    if (this.reader.source !== this.settings.modeFile) this.reader = this.readerFor(this.settings.modeFile);
    return this.reader.read();
  };

  watchMode(): (onChange: () => void) => ModeWatch {
    const path = this.settings.modeFile;
    return (onChange) => watchModeSource(path, onChange);
  }

  agentOptions(): AgentOptions {
    const s = this.settings;
    return {
      config: this.deps.plannerConfig(s),
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

  /** Resolves the settings again; what is fixed at start is kept, and said so. A failure keeps them all. */
  async reload(raw: RawRunOptions): Promise<void> {
    const { log } = this.deps;
    try {
      const next = await resolveSettings(raw);
      const kept: Partial<Settings> = {};
      for (const key of FIXED_AT_START) {
        if (next[key] === this.settings[key]) continue;
        log.warn(
          { setting: key, running: this.settings[key], ignored: next[key] },
          `a new ${key} takes effect only when the agent restarts`,
        );
        Object.assign(kept, { [key]: this.settings[key] });
      }
      this.settings = { ...next, ...kept };
      this.probeNow = this.deps.probeFor(this.settings);
    } catch (err) {
      log.error({ err }, 'reload failed: keeping the running configuration');
    }
  }

  // Wall time to compare with the file's mtime, the monotonic clock for how long it stayed unchanged.
  private readerFor(file: string): ModeReader {
    return new ModeReader(
      file,
      () => this.deps.clock.wall(),
      () => this.deps.clock.now(),
    );
  }
}

/** What watches the agent: metrics, the event history and its watchers, and the version of what GET /status serves. */
export class Views {
  readonly metrics: AgentMetrics;
  readonly history: EventHistory;
  readonly watch: WatchHub;
  /** What GET /status serves changes only with a pass or a reload: it is serialised once per change. */
  private served = 0;

  constructor(strategy: string, clock: Clock, status: () => StatusReport, log: Logger) {
    this.metrics = new AgentMetrics({ version: VERSION, strategy });
    this.history = new EventHistory(clock, log.child({ component: 'events' }));
    this.watch = new WatchHub(this.history, status);
  }

  get version(): number {
    return this.served;
  }

  /** The status changed (a pass, a reload). */
  readonly changed = (): void => {
    this.served++;
  };

  /** Told after each pass; each view is told apart: one that throws must not silence the others, nor the loop. */
  onStatus(s: StatusReport, log: Logger): void {
    for (const view of [this.metrics, this.history, this.watch]) {
      try {
        view.onStatus(s);
      } catch (err) {
        log.error({ err }, 'a status view failed');
      }
    }
  }
}
