/**
 * The Node flags every launcher starts the daemon with (the systemd unit, the Debian
 * package's unit, the image's entrypoint): test/packaging/launch-flags.test.ts holds the
 * launchers to them; the soak runs the agent with them.
 */
export const SHIPPED_NODE_FLAGS = ['--max-semi-space-size=1', '--v8-pool-size=1'];
