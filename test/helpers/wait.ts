// A bound on a wait, so that a test whose expectation never comes true fails instead
// of hanging. The bound is a safety net, never a speed assertion: keep it generous.
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`never happened within ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}
